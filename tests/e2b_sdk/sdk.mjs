// SPDX-License-Identifier: MIT
// `execbox serve`'s E2B routes driven by E2B's official JavaScript SDK (@e2b/code-interpreter,
// pinned in package-lock.json, installed by run.sh), unchanged, in its debug mode:
// E2B_DEBUG=true E2B_SANDBOX_URL=http://127.0.0.1:PORT/e2b/TOKEN against a real serve with a
// token and a short cell timeout. Plus a few raw requests for what the SDK does not show (the
// token in the path, the log). Prints "N passed, N failed, N skipped".
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const SOURCE = process.env.EXECBOX_SOURCE || path.join(here, '..', '..');
const EXECBOX = process.env.EXECBOX || path.join(SOURCE, 'build', 'execbox');
const SKIP = 77;
const TOKEN = 'e2b-test-token-0123456789';
const CELL_TIMEOUT = 4; // seconds: the server's --timeout, each cell's limit

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function assert(cond, msg) {
    if (!cond) throw new Error(`assertion failed: ${msg}`);
}
function assertEq(got, want, msg) {
    if (JSON.stringify(got) !== JSON.stringify(want))
        throw new Error(`${msg}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

function sdk() {
    const dir = process.env.E2B_NODE_DIR;
    if (!dir) throw new Error('E2B_NODE_DIR is not set: run the tests through run.sh');
    return createRequire(path.join(dir, 'package.json'))('@e2b/code-interpreter');
}

// One serve for the whole suite; its log (stderr) is kept to check it and for failure reports.
class Serve {
    async start() {
        const b = process.env.EXECBOX_TEST_BACKEND;
        const args = ['serve', '--listen', '127.0.0.1:0', '--token', TOKEN, '--workers', '3',
            '--timeout', String(CELL_TIMEOUT), ...(b ? ['--backend', b] : [])];
        this.proc = spawn(EXECBOX, args, { stdio: ['ignore', 'ignore', 'pipe'] });
        this.log = '';
        this.proc.stderr.setEncoding('utf8');
        this.proc.stderr.on('data', (d) => { this.log += d; });
        this.exited = new Promise((r) => this.proc.on('exit', (code) => r(code)));
        const end = Date.now() + 30000;
        while (Date.now() < end) {
            const m = /"event":"listening","message":"([^"]+)"/.exec(this.log);
            if (m) {
                this.addr = m[1];
                return;
            }
            await sleep(50);
        }
        throw new Error(`serve did not start:\n${this.log}`);
    }
    url(p = '') {
        return `http://${this.addr}/e2b/${TOKEN}${p}`;
    }
    async stop() {
        this.proc.kill('SIGTERM');
        const t = setTimeout(() => this.proc.kill('SIGKILL'), 20000);
        const code = await this.exited;
        clearTimeout(t);
        return code;
    }
}

const serve = new Serve();
let Sandbox, errors;
let sbx;

// What a cell's "stdout" lines carry, joined.
const out = (ex) => ex.logs.stdout.join('');

async function testCreateAndRunCode() {
    sbx = await Sandbox.create();
    const ex = await sbx.runCode('print("hello")\n6 * 7');
    assertEq(ex.logs.stdout, ['hello\n'], 'stdout, one message per line');
    assertEq(ex.text, '42', 'the main result');
    assertEq(ex.results.length, 1, 'one result');
    assert(ex.results[0].isMainResult, 'is_main_result');
    assert(ex.error === undefined, `no error: ${JSON.stringify(ex.error)}`);
    assert(Number.isInteger(ex.executionCount) && ex.executionCount >= 1,
        `execution count ${ex.executionCount}`);
    const ex2 = await sbx.runCode('"a string"');
    assertEq(ex2.text, 'a string', "a string's text drops the quotes, as E2B's does");
    assertEq(ex2.executionCount, ex.executionCount + 1, 'the count advances');
}

async function testStateAcrossCalls() {
    await sbx.runCode('x = 41');
    const ex = await sbx.runCode('x += 1\nx');
    assertEq(ex.text, '42', 'x kept across runCode calls');
}

async function testExceptionIsExecutionError() {
    const ex = await sbx.runCode('y = 5\n1 / 0');
    assert(ex.error, 'execution.error is set');
    assertEq(ex.error.name, 'ZeroDivisionError', 'name');
    assertEq(ex.error.value, 'division by zero', 'value');
    assert(ex.error.traceback.includes('ZeroDivisionError'), `traceback: ${ex.error.traceback}`);
    // Transactional cells: the failed cell is rolled back, y never existed.
    const ex2 = await sbx.runCode('y');
    assertEq(ex2.error && ex2.error.name, 'NameError', 'the failed cell left nothing behind');
    assertEq((await sbx.runCode('x')).text, '42', 'earlier state kept');
}

async function testStreamingCallbacks() {
    const seen = [];
    const t0 = Date.now();
    const ex = await sbx.runCode(
        'import sys, time\nprint("first")\nprint("warn", file=sys.stderr)\ntime.sleep(1.5)\n' +
        'print("second")',
        {
            onStdout: (m) => seen.push({ line: m.line, t: Date.now() - t0, err: m.error }),
            onStderr: (m) => seen.push({ line: m.line, t: Date.now() - t0, err: m.error }),
        });
    const first = seen.find((s) => s.line.includes('first'));
    const second = seen.find((s) => s.line.includes('second'));
    const warn = seen.find((s) => s.line.includes('warn'));
    assert(first && second && warn, `lines seen: ${JSON.stringify(seen)}`);
    assert(warn.err === true && first.err === false, 'stderr and stdout told apart');
    // The first line came while the cell still slept: before the second was printed.
    assert(second.t - first.t >= 1000, `first at ${first.t} ms, second at ${second.t} ms`);
    assertEq(out(ex), 'first\nsecond\n', 'logs.stdout holds both');
    assertEq(ex.logs.stderr.join(''), 'warn\n', 'logs.stderr');
}

async function testOutputCappedAtOutputLimit() {
    // 3 MiB printed; the server's output_limit (1 MiB by default) caps what is streamed.
    const ex = await sbx.runCode('for i in range(3072):\n    print("x" * 1023)');
    const streamed = ex.logs.stdout.reduce((n, l) => n + l.length, 0);
    assert(streamed <= 1 << 20 && streamed > 1000 * 1024, `streamed ${streamed} bytes`);
    assert(ex.logs.stderr.join('').includes('output_limit'), 'a note says why');
    assert(!ex.error, `no error: ${JSON.stringify(ex.error)}`);
}

async function testDataFrameIsHtml() {
    const ex = await sbx.runCode('import pandas as pd\npd.DataFrame({"a": [1, 2], "b": [3, 4]})');
    assert(!ex.error, `no error: ${JSON.stringify(ex.error)}`);
    const r = ex.results.find((x) => x.isMainResult);
    assert(r && r.html && r.html.includes('<table'), `html: ${r && r.html}`);
    assert(r.text && r.text.includes('a'), 'and text');
    assert(r.formats().includes('html'), 'formats() lists html');
}

async function testMatplotlibIsPng() {
    const ex = await sbx.runCode(
        'import matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\n' +
        'plt.plot([1, 2, 3], [1, 4, 9])\nplt.show()');
    assert(!ex.error, `no error: ${JSON.stringify(ex.error)}`);
    const r = ex.results.find((x) => x.png);
    assert(r, `a png result among ${JSON.stringify(ex.results.map((x) => x.formats()))}`);
    assert(Buffer.from(r.png, 'base64').subarray(0, 8).equals(
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'PNG bytes');
}

async function testServerTimeoutIsTimeoutError() {
    const t0 = Date.now();
    const ex = await sbx.runCode('z = 1\nimport time\ntime.sleep(60)');
    assert(Date.now() - t0 < (CELL_TIMEOUT + 10) * 1000, 'ended at the cell timeout');
    assertEq(ex.error && ex.error.name, 'TimeoutError', 'error name');
    assertEq((await sbx.runCode('"z" in globals()')).text, 'False', 'the timed-out cell rolled back');
}

async function testClientTimeoutThrowsAndKillsTheCell() {
    let thrown;
    try {
        await sbx.runCode('while True: pass', { timeoutMs: 1000 });
    } catch (e) {
        thrown = e;
    }
    assert(thrown instanceof errors.TimeoutError, `SDK TimeoutError, got ${thrown}`);
    // The hang-up killed the cell: the context takes the next one at once, not after 4 s.
    const t0 = Date.now();
    let ex;
    for (;;) {
        try {
            ex = await sbx.runCode('x');
            break;
        } catch (e) {
            if (!String(e).includes('409') || Date.now() - t0 > 3000) throw e;
            await sleep(100);
        }
    }
    assertEq(ex.text, '42', 'state kept');
    assert(Date.now() - t0 < 3000, `context free again after ${Date.now() - t0} ms`);
}

async function testContextsAreIsolated() {
    const c1 = await sbx.createCodeContext();
    const c2 = await sbx.createCodeContext({ language: 'python' });
    assert(c1.id && c2.id && c1.id !== c2.id, 'two ids');
    assertEq(c1.language, 'python', 'language');
    assertEq(c1.cwd, '/workspace', 'cwd');
    await sbx.runCode('v = "one"', { context: c1 });
    assertEq((await sbx.runCode('v', { context: c1 })).text, 'one', 'c1 has v');
    const ex = await sbx.runCode('v', { context: c2 });
    assertEq(ex.error && ex.error.name, 'NameError', 'c2 does not');
    assertEq((await sbx.runCode('"v" in globals()')).text, 'False', 'nor the default context');
    const ids = (await sbx.listCodeContexts()).map((c) => c.id);
    assert(ids.includes(c1.id) && ids.includes(c2.id), `listed: ${ids}`);
    await sbx.removeCodeContext(c2);
    assert(!(await sbx.listCodeContexts()).some((c) => c.id === c2.id), 'removed');
    let thrown;
    try {
        await sbx.runCode('1', { context: c2 });
    } catch (e) {
        thrown = e;
    }
    assert(thrown instanceof errors.NotFoundError, `NotFoundError, got ${thrown}`);
    await sbx.removeCodeContext(c1);
}

async function testRestartContext() {
    const c = await sbx.createCodeContext();
    await sbx.runCode('w = 7', { context: c });
    assertEq((await sbx.runCode('w', { context: c })).text, '7', 'w set');
    await sbx.restartCodeContext(c);
    const ex = await sbx.runCode('w', { context: c });
    assertEq(ex.error && ex.error.name, 'NameError', 'state gone after restart');
    assertEq((await sbx.runCode('1 + 1', { context: c })).text, '2', 'the same id works on');
    assert((await sbx.listCodeContexts()).some((x) => x.id === c.id), 'still listed');
    await sbx.removeCodeContext(c.id);
    let thrown;
    try {
        await sbx.restartCodeContext(c);
    } catch (e) {
        thrown = e;
    }
    assert(thrown instanceof errors.NotFoundError, `restart of a removed one: ${thrown}`);
}

async function testBusyContextIs409() {
    const c = await sbx.createCodeContext();
    const first = sbx.runCode('import time\ntime.sleep(1.5)\n"done"', { context: c });
    await sleep(500);
    let thrown;
    try {
        await sbx.runCode('1', { context: c });
    } catch (e) {
        thrown = e;
    }
    assert(thrown instanceof errors.SandboxError && String(thrown).includes('409'),
        `a second cell at once: ${thrown}`);
    assertEq((await first).text, 'done', 'the first cell ran on');
    await sbx.removeCodeContext(c);
}

async function testRestartAbortsARunningCell() {
    const c = await sbx.createCodeContext();
    await sbx.runCode('k = 1', { context: c });
    const t0 = Date.now();
    const running = sbx.runCode('import time\ntime.sleep(30)', { context: c });
    await sleep(500);
    await sbx.restartCodeContext(c);
    const ex = await running;
    assertEq(ex.error && ex.error.name, 'ExecutionAborted', 'the running cell was aborted');
    assert(Date.now() - t0 < 10000, 'at once');
    const ex2 = await sbx.runCode('"k" in globals()', { context: c });
    assertEq(ex2.text, 'False', 'a fresh interpreter');
    await sbx.removeCodeContext(c);
}

async function testTokenRidesInThePath() {
    const body = JSON.stringify({ code: 'print(1)' });
    const h = { 'Content-Type': 'application/json' };
    let r = await fetch(`http://${serve.addr}/e2b/execute`, { method: 'POST', headers: h, body });
    assertEq(r.status, 401, 'no token');
    r = await fetch(`http://${serve.addr}/e2b/wrong-token/execute`, { method: 'POST', headers: h, body });
    assertEq(r.status, 401, 'a wrong token');
    r = await fetch(`http://${serve.addr}/e2b/execute`,
        { method: 'POST', headers: { ...h, Authorization: `Bearer ${TOKEN}` }, body });
    assertEq(r.status, 200, 'the bearer header works too');
    await r.text();
    r = await fetch(serve.url('/health'));
    assertEq(r.status, 200, 'health');
    r = await fetch(serve.url('/execute'), { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body });
    assertEq(r.status, 415, 'a body not sent as JSON');
    r = await fetch(serve.url('/nowhere'));
    assertEq(r.status, 404, 'an unknown route');
    assert(!serve.log.includes(TOKEN), 'the token never reaches the log');
    assert(serve.log.includes('"path":"/e2b/***/execute"'), 'the log shows the path without it');
    // With a wrong URL the SDK fails as it does against an unreachable E2B.
    const bad = await Sandbox.create({ sandboxUrl: `http://${serve.addr}/e2b` });
    let thrown;
    try {
        await bad.runCode('1');
    } catch (e) {
        thrown = e;
    }
    assert(thrown instanceof errors.SandboxError && String(thrown).includes('401'), `got ${thrown}`);
}

async function testNdjsonWire() {
    const r = await fetch(serve.url('/execute'), {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ code: 'print("a")\n{"k": 1}', language: 'python' }),
    });
    assertEq(r.status, 200, 'status');
    assertEq(r.headers.get('content-type'), 'application/x-ndjson', 'content type');
    const lines = (await r.text()).trimEnd().split('\n').map((l) => JSON.parse(l));
    const types = lines.map((l) => l.type);
    assertEq(types, ['stdout', 'result', 'number_of_executions', 'end_of_execution'], 'line types');
    assert(typeof lines[0].timestamp === 'string' && lines[0].text === 'a\n', 'stdout line');
    assertEq(lines[1].text, "{'k': 1}", 'result text');
    assertEq(lines[1].is_main_result, true, 'is_main_result');
    const both = await fetch(serve.url('/execute'), {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ code: '1', language: 'python', context_id: 'abc' }),
    });
    assertEq(both.status, 400, 'context_id and language together');
    await both.text();
}

async function main() {
    const probe = spawnSync(EXECBOX, ['run', ...(process.env.EXECBOX_TEST_BACKEND
        ? ['--backend', process.env.EXECBOX_TEST_BACKEND] : []), '-c', 'print(1)'],
    { encoding: 'utf8', timeout: 60000 });
    if (probe.status !== 0) {
        console.log(`SKIP: the sandbox cannot run here: ${probe.stderr.trim()}`);
        process.exit(SKIP);
    }
    const mod = sdk();
    Sandbox = mod.Sandbox;
    errors = mod;
    await serve.start();
    process.env.E2B_DEBUG = 'true';
    process.env.E2B_SANDBOX_URL = serve.url();
    // In order: later tests build on the state of earlier ones.
    const tests = Object.entries({
        testCreateAndRunCode,
        testStateAcrossCalls,
        testExceptionIsExecutionError,
        testStreamingCallbacks,
        testOutputCappedAtOutputLimit,
        testDataFrameIsHtml,
        testMatplotlibIsPng,
        testServerTimeoutIsTimeoutError,
        testClientTimeoutThrowsAndKillsTheCell,
        testContextsAreIsolated,
        testRestartContext,
        testBusyContextIs409,
        testRestartAbortsARunningCell,
        testTokenRidesInThePath,
        testNdjsonWire,
    });
    const only = process.argv.slice(2);
    let passed = 0, failed = 0;
    for (const [name, fn] of tests) {
        if (only.length && !only.includes(name)) continue;
        const t0 = Date.now();
        try {
            await fn();
            passed++;
            console.log(`ok   ${name} (${Date.now() - t0} ms)`);
        } catch (e) {
            failed++;
            console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
        }
    }
    const code = await serve.stop();
    if (code !== 0) {
        failed++;
        console.log(`FAIL serve exited ${code} after SIGTERM`);
    }
    if (failed)
        console.log(`--- serve's log ---\n${serve.log.split('\n').slice(-60).join('\n')}`);
    console.log(`${passed} passed, ${failed} failed, 0 skipped`);
    process.exit(failed ? 1 : 0);
}

await main();
