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

// E2B queues the cells of a busy context: they wait their turn and run in the order they came,
// each seeing the one before; one past the server's bound (E2B_QUEUE_MAX) is refused with 429;
// another context is not held back meanwhile. The queued cells go on the raw wire, each sent
// once the one before it is in (its stream's headers come back when it is queued), so that the
// order in which they came is the order they were sent: the SDK's concurrent calls may reach
// the server in any order.
const QUEUE_MAX = 16;
async function testBusyContextQueuesItsCells() {
    const c = await sbx.createCodeContext();
    const other = await sbx.createCodeContext();
    let firstDone = false;
    const first = sbx.runCode('import time\ntime.sleep(2.5)\nseen = ["first"]\n"done"',
        { context: c });
    first.then(() => { firstDone = true; }, () => {});
    await sleep(300);
    const rest = [];
    for (let i = 0; i < QUEUE_MAX; i++) {
        const r = await fetch(serve.url('/execute'), {
            method: 'POST', headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ code: `seen.append(${i}); len(seen)`, context_id: c.id }),
        });
        assertEq(r.status, 200, `queued cell ${i}`);
        rest.push(r.text().then((t) => t.trimEnd().split('\n').map((l) => JSON.parse(l))
            .filter((l) => l.type === 'result').map((l) => l.text).join('')));
    }
    let thrown;
    try {
        await sbx.runCode('1', { context: c });
    } catch (e) {
        thrown = e;
    }
    assert(thrown instanceof errors.SandboxError && String(thrown).includes('429'),
        `one past the queue: ${thrown}`);
    assertEq((await sbx.runCode('"free"', { context: other })).text, 'free', 'other context');
    assert(!firstDone, 'the other context ran while this one was busy');
    assertEq((await first).text, 'done', 'the first cell ran on');
    const texts = await Promise.all(rest);
    assertEq(texts, Array.from({ length: QUEUE_MAX }, (_, i) => String(i + 2)), 'in order');
    assertEq((await sbx.runCode('seen[:4]', { context: c })).text, "['first', 0, 1, 2]",
        'each once, in order');
    await sbx.removeCodeContext(c);
    await sbx.removeCodeContext(other);
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

// ---- envd: sandbox.files and sandbox.commands, in the default context's workspace ----------

// Runs fn, which must throw an error of the class want (by name); returns the error.
async function mustThrow(fn, want, msg) {
    try {
        await fn();
    } catch (e) {
        assert(e instanceof errors[want], `${msg}: expected ${want}, got ${e && e.name}: ${e && e.message}`);
        return e;
    }
    throw new Error(`${msg}: expected ${want}, nothing was thrown`);
}

async function testFilesWriteReadList() {
    const s = await Sandbox.create();
    const info = await s.files.write('/home/user/envd/a.txt', 'hello files');
    assertEq([info.name, info.type, info.path], ['a.txt', 'file', '/workspace/envd/a.txt'],
        'write answers the file');
    assertEq(await s.files.read('/home/user/envd/a.txt'), 'hello files', 'read back');
    assertEq(await s.files.read('envd/a.txt'), 'hello files', 'a relative path is in the workspace');
    const many = await s.files.write([
        { path: '/workspace/envd/b.bin', data: new Uint8Array([0, 1, 2, 255]).buffer },
        { path: 'envd/sub/c.txt', data: 'c' },
    ]);
    assertEq(many.map((f) => f.path), ['/workspace/envd/b.bin', '/workspace/envd/sub/c.txt'],
        'writeFiles answers each file');
    const bytes = await s.files.read('/workspace/envd/b.bin', { format: 'bytes' });
    assertEq(Array.from(bytes), [0, 1, 2, 255], 'binary bytes are kept');
    assertEq(await s.files.read('/workspace/envd/sub/c.txt'), 'c', 'parents are made');
    const ex = await s.runCode('open("/workspace/envd/a.txt").read()');
    assertEq(ex.text, 'hello files', 'runCode (the default context) sees the file');

    const list = await s.files.list('/home/user/envd');
    assertEq(list.map((e) => [e.name, e.type, e.path]), [
        ['a.txt', 'file', '/workspace/envd/a.txt'],
        ['b.bin', 'file', '/workspace/envd/b.bin'],
        ['sub', 'dir', '/workspace/envd/sub'],
    ], 'list: the entries, sorted');
    assertEq(list[1].size, 4, 'list: the size');
    assert(list[0].modifiedTime instanceof Date, 'list: modifiedTime');
    const deep = await s.files.list('/workspace/envd', { depth: 2 });
    assert(deep.some((e) => e.path === '/workspace/envd/sub/c.txt'), 'list depth 2');

    assertEq(await s.files.exists('/home/user/envd/sub/c.txt'), true, 'exists: a file');
    assertEq(await s.files.exists('/home/user/envd/sub'), true, 'exists: a directory');
    assertEq(await s.files.exists('/home/user/envd/nope'), false, 'exists: nothing there');
    const gi = await s.files.getInfo('/workspace/envd/b.bin');
    assertEq([gi.type, gi.size, gi.permissions], ['file', 4, '-rw-r--r--'], 'getInfo');

    assertEq(await s.files.makeDir('/workspace/envd/new/deep'), true, 'makeDir makes parents');
    assertEq(await s.files.makeDir('/workspace/envd/new/deep'), false, 'makeDir: already there');
    assertEq((await s.files.getInfo('envd/new/deep')).type, 'dir', 'makeDir made a directory');
    const seen = await s.runCode('import os; sorted(os.listdir("/workspace/envd/new"))');
    assertEq(seen.text, "['deep']", 'the cell sees the new directory');

    // rename: a file (over another), a directory with what is in it; what is not there, a
    // non-empty directory in the way and a path outside are refused.
    const moved = await s.files.rename('/workspace/envd/sub/c.txt', '/home/user/envd/c2.txt');
    assertEq([moved.name, moved.type, moved.path], ['c2.txt', 'file', '/workspace/envd/c2.txt'],
        'rename answers the moved file');
    assertEq(await s.files.read('envd/c2.txt'), 'c', 'rename: the bytes moved');
    assertEq(await s.files.exists('envd/sub/c.txt'), false, 'rename: gone from the old path');
    await s.files.write('envd/over.txt', 'old');
    await s.files.rename('envd/c2.txt', 'envd/over.txt');
    assertEq(await s.files.read('envd/over.txt'), 'c', 'rename replaces a file');
    await s.files.write('envd/new/deep/x.txt', 'x');
    assertEq((await s.files.rename('envd/new', 'envd/newer')).type, 'dir', 'rename a directory');
    assertEq(await s.files.read('envd/newer/deep/x.txt'), 'x', 'its files moved with it');
    await mustThrow(() => s.files.rename('envd/nope', 'envd/nope2'), 'FileNotFoundError',
        'rename: nothing there');
    await mustThrow(() => s.files.rename('envd/over.txt', '/etc/passwd'), 'InvalidArgumentError',
        'rename out of the workspace');
    assertEq((await s.runCode('open("/workspace/envd/newer/deep/x.txt").read()')).text, 'x',
        'the cell sees the moved file');

    await s.files.remove('/workspace/envd/a.txt');
    assertEq(await s.files.exists('/workspace/envd/a.txt'), false, 'remove: a file');
    await s.files.remove('/workspace/envd');
    assertEq(await s.files.exists('/workspace/envd'), false, 'remove: a tree');
    await mustThrow(() => s.files.read('/workspace/envd/b.bin'), 'FileNotFoundError',
        'read: a removed file');
    await mustThrow(() => s.files.list('/workspace/envd'), 'FileNotFoundError',
        'list: a removed directory');
    await mustThrow(() => s.files.remove('/workspace/envd'), 'FileNotFoundError',
        'remove: nothing there');
}

async function testFilesOutsideTheWorkspaceAreRefused() {
    const s = await Sandbox.create();
    for (const p of ['/etc/passwd', '../etc/passwd', '/workspace/../etc/passwd',
        '/home/user/../../etc/passwd', '/tmp/x', 'a/./b']) {
        await mustThrow(() => s.files.read(p), 'InvalidArgumentError', `read ${p}`);
        await mustThrow(() => s.files.write(p, 'x'), 'InvalidArgumentError', `write ${p}`);
        await mustThrow(() => s.files.list(p), 'InvalidArgumentError', `list ${p}`);
        await mustThrow(() => s.files.exists(p), 'InvalidArgumentError', `exists ${p}`);
        await mustThrow(() => s.files.makeDir(p), 'InvalidArgumentError', `makeDir ${p}`);
        await mustThrow(() => s.files.remove(p), 'InvalidArgumentError', `remove ${p}`);
    }
    // A link the code planted is not followed out of the workspace.
    const ex = await s.runCode('import os\nif not os.path.lexists("/workspace/etc-link"): '
        + 'os.symlink("/etc", "/workspace/etc-link")');
    assert(!ex.error, `planting the link: ${ex.error && ex.error.value}`);
    await mustThrow(() => s.files.read('/workspace/etc-link/passwd'), 'InvalidArgumentError',
        'read through a symlink');
    await mustThrow(() => s.files.write('/workspace/etc-link/x', 'x'), 'InvalidArgumentError',
        'write through a symlink');
    await mustThrow(() => s.files.list('/workspace/etc-link'), 'InvalidArgumentError',
        'list through a symlink');
    await mustThrow(() => s.files.makeDir('/workspace/etc-link/x'), 'InvalidArgumentError',
        'makeDir through a symlink');
    await mustThrow(() => s.files.exists('/workspace/etc-link/passwd'), 'InvalidArgumentError',
        'exists through a symlink');
    await s.files.remove('/workspace/etc-link'); // the link itself
    assertEq(await s.files.exists('/workspace/etc-link'), false, 'the link is gone');
}

async function testCommandsRun() {
    const s = await Sandbox.create();
    const chunks = [];
    const r = await s.commands.run('echo out; echo err >&2; pwd', {
        onStdout: (d) => chunks.push(d),
    });
    assertEq([r.exitCode, r.stdout, r.stderr], [0, 'out\n/workspace\n', 'err\n'],
        'exit code, stdout, stderr');
    assertEq(chunks.join(''), 'out\n/workspace\n', 'onStdout sees the output');
    const e = await mustThrow(() => s.commands.run('echo partial; echo bad >&2; exit 3'),
        'CommandExitError', 'a non-zero exit');
    assertEq([e.exitCode, e.stdout, e.stderr], [3, 'partial\n', 'bad\n'],
        'the exit error carries the result');
    const env = await s.commands.run('echo "$GREETING $HOME"', { envs: { GREETING: 'hi' } });
    assertEq(env.stdout, 'hi /workspace\n', 'envs reach the command');
    const cwd = await s.commands.run('pwd', { cwd: '/tmp' });
    assertEq(cwd.stdout, '/tmp\n', 'cwd');
    await s.commands.run('mkdir -p /workspace/cmd && echo made > /workspace/cmd/f.txt');
    assertEq(await s.files.read('/home/user/cmd/f.txt'), 'made\n',
        'files see what a command wrote');
    const walls = await s.commands.run('id -un; (echo > /usr/x) 2>/dev/null || echo read-only');
    assertEq(walls.stdout.trim().split('\n').pop(), 'read-only', 'the sandbox\'s root is read-only');
    const t0 = Date.now();
    await mustThrow(() => s.commands.run('sleep 30'), 'TimeoutError',
        'a command past the server\'s cell timeout');
    assert(Date.now() - t0 < (CELL_TIMEOUT + 5) * 1000, 'killed at the cell timeout');
    // The commands left the interpreter's state alone.
    const ex = await s.runCode('[n for n in globals() if n.startswith("_execbox")]');
    assertEq(ex.text, '[]', 'no names of the command cells');
    await s.commands.run('true');
    const next = await s.runCode('2');
    assertEq(next.executionCount, ex.executionCount + 1, 'commands are not counted as executions');
}

async function testBackgroundCommandKill() {
    const s = await Sandbox.create();
    const h = await s.commands.run('echo started; sleep 30', { background: true });
    assert(typeof h.pid === 'number' && h.pid > 0, 'a pid');
    await sleep(300);
    await mustThrow(() => s.commands.run('true'), 'SandboxError',
        'a second command while one runs (one cell at a time)');
    assertEq(await h.kill(), true, 'kill');
    const e = await mustThrow(() => h.wait(), 'CommandExitError', 'wait after kill');
    assertEq(e.stdout, 'started\n', 'output before the kill');
    assertEq(await s.commands.kill(h.pid), false, 'kill: no such process any more');
    const bg = await s.commands.run('echo bg', { background: true });
    assertEq((await bg.wait()).stdout, 'bg\n', 'wait for a background command');
}

async function testRunCodeEnvs() {
    const s = await Sandbox.create();
    const ctx = await s.createCodeContext();
    const first = await s.runCode('1', { context: ctx });
    const ex = await s.runCode('import os, subprocess\nprint(os.environ["GREETING"])\n'
        + 'subprocess.run(["sh", "-c", "echo $GREETING"])\nos.environ["HOME"]',
    { context: ctx, envs: { GREETING: 'hi there', HOME: '/elsewhere' } });
    assertEq(ex.logs.stdout.join(''), 'hi there\nhi there\n', 'the cell and its children see envs');
    assertEq(ex.text, '/elsewhere', 'an env var replaced for the cell');
    assertEq(ex.executionCount, first.executionCount + 1, 'the count is of the client\'s cells');
    const failed = await s.runCode('import os\nassert os.environ["X"] == "1"\nraise ValueError("v")',
        { context: ctx, envs: { X: '1' } });
    assertEq(failed.error && failed.error.name, 'ValueError', 'a failing cell with envs');
    const after = await s.runCode('import os\n(os.environ.get("GREETING"), os.environ.get("X"), '
        + 'os.environ["HOME"], [n for n in globals() if n.startswith("_execbox")])', { context: ctx });
    assertEq(after.text, "(None, None, '/workspace', [])", 'envs are the cell\'s only');
    assertEq(after.executionCount, first.executionCount + 3, 'counted once per runCode');
    await mustThrow(() => s.runCode('1', { context: ctx, envs: { 'A=B': 'x' } }), 'SandboxError',
        'a name with "="');
    const dflt = await s.runCode('import os\nos.environ["ONLY"]', { envs: { ONLY: 'here' } });
    assertEq(dflt.text, 'here', 'envs in the default context');
    await s.removeCodeContext(ctx);
}

async function testEnvdRawWire() {
    const post = (q, type, body) => fetch(serve.url(`/files${q}`), {
        method: 'POST', headers: { 'Content-Type': type }, body,
    });
    let r = await post('?path=/workspace/raw/o.bin', 'application/octet-stream', 'octets');
    assertEq([r.status, (await r.json())[0].path], [200, '/workspace/raw/o.bin'], 'octet-stream');
    r = await fetch(serve.url('/files?path=%2Fworkspace%2Fraw%2Fo.bin'));
    assertEq([r.status, await r.text()], [200, 'octets'], 'escapes in the query are decoded');
    const bad = [
        ['?path=/workspace/raw/x', 'multipart/form-data; boundary=XX', '--XX\r\nContent-Disposition: form-data; name="file"\r\n\r\nno end'],
        ['?path=/workspace/raw/x', 'multipart/form-data', '--XX--\r\n'],
        ['?path=/workspace/raw/x', 'text/plain', 'x'],
        ['?path=%2Fworkspace%2F%00x', 'application/octet-stream', 'x'],
        ['', 'application/octet-stream', 'x'],
    ];
    for (const [q, type, body] of bad) {
        r = await post(q, type, body);
        const j = await r.json();
        assert(r.status === 400 || r.status === 415, `${type} ${q}: status ${r.status}`);
        assert(typeof j.message === 'string' && j.code === r.status, `${type} ${q}: envd's error`);
    }
    r = await fetch(serve.url('/filesystem.Filesystem/CreateWatcher'), {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}',
    });
    assertEq([r.status, (await r.json()).code], [501, 'unimplemented'], 'a method not served');
    r = await fetch(serve.url('/filesystem.Filesystem/Move'), {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}',
    });
    assertEq([r.status, (await r.json()).code], [400, 'invalid_argument'], 'Move with no paths');
    r = await fetch(serve.url('/process.Process/Start'), {
        method: 'POST', headers: { 'Content-Type': 'application/connect+json' },
        body: Buffer.from([0, 0, 0, 0, 9, 0x7b, 0x7d]),
    });
    const b = Buffer.from(await r.arrayBuffer());
    assertEq([r.status, r.headers.get('content-type'), b[0]], [200, 'application/connect+json', 2],
        'a bad envelope: the end of the stream');
    assertEq(JSON.parse(b.subarray(5).toString()).error.code, 'invalid_argument', 'its error');
    r = await fetch(serve.url('/filesystem.Filesystem/Remove'), {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ path: '/workspace' }),
    });
    assertEq([r.status, (await r.json()).code], [400, 'invalid_argument'],
        'the workspace itself is not removed');
}

// ---- the control plane: Sandbox.create() against serve (E2B_API_URL), outside debug mode ----

// Each sandbox has its own default context, contexts and files; getInfo, list, setTimeout and
// connect work on it; another sandbox's context, a wrong access token or an unknown id is
// refused; kill ends it and its contexts.
async function testSandboxesOfTheControlPlane() {
    const opts = { debug: false, apiUrl: serve.url(), sandboxUrl: serve.url(), apiKey: 'unused' };
    const a = await Sandbox.create(opts);
    const b = await Sandbox.create({ ...opts, metadata: { who: 'b' } });
    assert(a.sandboxId && b.sandboxId && a.sandboxId !== b.sandboxId, 'two sandbox ids');
    await a.runCode('v = "a"');
    await b.runCode('v = "b"');
    assertEq((await a.runCode('v')).text, 'a', "a's default context");
    assertEq((await b.runCode('v')).text, 'b', "b's default context");
    assertEq((await sbx.runCode('"v" in globals()')).text, 'False', 'nor the shared one (debug)');
    await a.files.write('only-a.txt', 'A');
    assert(await a.files.exists('only-a.txt'), 'a has its file');
    assert(!(await b.files.exists('only-a.txt')), 'b has not');
    assertEq((await b.commands.run('ls /workspace')).stdout, '', "b's workspace is its own");
    const ca = await a.createCodeContext();
    assert((await a.listCodeContexts()).some((c) => c.id === ca.id), "a's list has it");
    assert(!(await b.listCodeContexts()).some((c) => c.id === ca.id), "b's list has not");
    await mustThrow(() => b.runCode('1', { context: ca }), 'NotFoundError', "b in a's context");

    const info = await Sandbox.getInfo(b.sandboxId, opts);
    assertEq([info.sandboxId, info.state, info.metadata], [b.sandboxId, 'running', { who: 'b' }],
        'getInfo');
    assert(info.endAt > info.startedAt, `ends after it started: ${info.startedAt} ${info.endAt}`);
    const listed = (await Sandbox.list(opts).nextItems()).map((x) => x.sandboxId);
    assert(listed.includes(a.sandboxId) && listed.includes(b.sandboxId),
        `listed: ${listed} (a ${a.sandboxId}, b ${b.sandboxId})`);
    await b.setTimeout(600 * 1000);
    const later = await Sandbox.getInfo(b.sandboxId, opts);
    assert(later.endAt - later.startedAt >= 590 * 1000, `setTimeout: ends at ${later.endAt}`);
    const again = await Sandbox.connect(a.sandboxId, opts);
    assertEq((await again.runCode('v')).text, 'a', 'connect reaches the same sandbox');

    const exec = (id, token) => fetch(serve.url('/execute'), {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': id,
            ...(token ? { 'X-Access-Token': token } : {}) },
        body: JSON.stringify({ code: 'v' }),
    });
    assertEq((await exec(a.sandboxId, 'wrong')).status, 401, 'a wrong access token');
    assertEq((await exec(a.sandboxId)).status, 401, 'no access token');
    assertEq((await exec('0123456789abcdef0123')).status, 404, 'an unknown sandbox');

    assertEq(await Sandbox.kill(a.sandboxId, opts), true, 'kill');
    assertEq(await Sandbox.kill(a.sandboxId, opts), false, 'killed already');
    await mustThrow(() => Sandbox.getInfo(a.sandboxId, opts), 'SandboxNotFoundError', 'getInfo');
    await mustThrow(() => a.runCode('v'), 'NotFoundError', 'runCode in a killed sandbox');
    assertEq((await b.runCode('v')).text, 'b', 'the other sandbox lives on');
    const r = await fetch(serve.url('/v2/sandboxes'), {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ templateID: 'base', envVars: { A: '1' } }),
    });
    assertEq([r.status, (await r.json()).code], [400, 400], 'envVars on create are refused');
    await Sandbox.kill(b.sandboxId, opts);
    // A sandbox past its timeout is gone, and so is its context's session.
    const sessions = async () => (await (await fetch(`http://${serve.addr}/v1/sessions`,
        { headers: { Authorization: `Bearer ${TOKEN}` } })).json()).sessions.length;
    const n0 = await sessions();
    const t = await Sandbox.create({ ...opts, timeoutMs: 1000 });
    assertEq((await t.runCode('1 + 1')).text, '2', 'a sandbox with a short timeout runs');
    assertEq(await sessions(), n0 + 1, 'its default context is a session');
    await sleep(1500);
    await mustThrow(() => t.runCode('1'), 'NotFoundError', 'runCode past the timeout');
    assertEq(await sessions(), n0, 'its session ended with it');
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
        testBusyContextQueuesItsCells,
        testSandboxesOfTheControlPlane,
        testRestartAbortsARunningCell,
        testTokenRidesInThePath,
        testNdjsonWire,
        testFilesWriteReadList,
        testFilesOutsideTheWorkspaceAreRefused,
        testCommandsRun,
        testBackgroundCommandKill,
        testRunCodeEnvs,
        testEnvdRawWire,
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
