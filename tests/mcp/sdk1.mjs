// SPDX-License-Identifier: MIT
// `execbox mcp` driven by the official MCP TypeScript SDK 1.x (`Client` over
// `StdioClientTransport`), which checks every reply against the protocol's schemas and each
// tool's structuredContent against its outputSchema: list tools, good code, failing code,
// timeouts, a matplotlib plot, 8 calls in parallel, a cancellation, and a clean shutdown.
import fs from 'node:fs';
import path from 'node:path';
import {
    EXECBOX, assert, assertEq, main, serverArgs, sdkRequire, sleep, textOf, tmpdir, waitFor,
} from './lib.mjs';

const req = sdkRequire();
const { Client } = req('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = req('@modelcontextprotocol/sdk/client/stdio.js');
const { LATEST_PROTOCOL_VERSION } = req('@modelcontextprotocol/sdk/types.js');
const Ajv = req('ajv');
const SDK_VERSION = JSON.parse(fs.readFileSync(
    path.join(process.env.MCP_NODE_DIR, 'node_modules/@modelcontextprotocol/sdk/package.json'))).version;

async function connect(extra) {
    const transport = new StdioClientTransport({
        command: EXECBOX, args: serverArgs(extra), env: { ...process.env }, stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr.on('data', (d) => { stderr += d; });
    // The client reports the negotiated version to transports that want it.
    let negotiated = null;
    transport.setProtocolVersion = (v) => { negotiated = v; };
    const client = new Client({ name: 'execbox-sdk1-test', version: '1.0.0' }, { capabilities: {} });
    await client.connect(transport);
    return { client, transport, stderr: () => stderr, version: () => negotiated };
}

let main_ = null; // the shared connection
let tools = null;

async function call(args, opts) {
    return main_.client.callTool({ name: 'execute_python', arguments: args }, undefined, opts);
}

const tests = {
    async test01_connect() {
        main_ = await connect(['--timeout', '20', '--jobs', '4']);
        const info = main_.client.getServerVersion();
        assertEq(info.name, 'execbox', 'serverInfo.name');
        assert(main_.client.getServerCapabilities().tools, 'tools capability');
        assert(main_.client.getInstructions().includes('sandbox'), 'instructions');
        // The SDK sends its newest version; the server echoes the ones it supports.
        assertEq(main_.version(), LATEST_PROTOCOL_VERSION, 'negotiated version');
        console.log(`  SDK ${SDK_VERSION}, protocol ${LATEST_PROTOCOL_VERSION}`);
    },

    async test02_list_tools() {
        const r = await main_.client.listTools();
        tools = r.tools;
        assertEq(tools.length, 1, 'one tool');
        const t = tools[0];
        assertEq(t.name, 'execute_python', 'name');
        assert(t.description.includes('sandbox') && t.description.includes('/workspace'), 'description');
        assertEq(t.inputSchema.type, 'object', 'inputSchema');
        assert(t.inputSchema.required.includes('code'), 'code required');
        assertEq(t.inputSchema.properties.timeout.maximum, 20, 'timeout maximum = the host\'s --timeout');
        assertEq(t.outputSchema.type, 'object', 'outputSchema');
        assertEq(t.annotations.readOnlyHint, false, 'readOnlyHint');
        assertEq(t.annotations.openWorldHint, false, 'openWorldHint');
        // The client now validates structuredContent with this schema on every call.
        assert(main_.client.getToolOutputValidator?.('execute_python') ||
               main_.client._cachedToolOutputValidators?.has('execute_python'),
               'the SDK cached an outputSchema validator');
    },

    async test03_good_code() {
        const r = await call({ code: 'import sys\nprint(6 * 7)\nprint("to stderr", file=sys.stderr)' });
        assert(!r.isError, `isError unset: ${textOf(r)}`);
        assertEq(r.structuredContent.exit_code, 0, 'exit_code');
        assertEq(r.structuredContent.stdout, '42\n', 'stdout');
        assertEq(r.structuredContent.stderr, 'to stderr\n', 'stderr');
        assertEq(r.structuredContent.language, 'python', 'language');
        assert(typeof r.structuredContent.execution_time === 'number', 'execution_time');
        const text = textOf(r);
        assert(text.includes('exit_code: 0') && text.includes('42') && text.includes('to stderr'), text);
        // Independently of the SDK: the record satisfies the advertised outputSchema.
        const validate = new Ajv({ strict: false }).compile(tools[0].outputSchema);
        assert(validate(r.structuredContent), JSON.stringify(validate.errors));
    },

    async test04_failing_code() {
        const r = await call({ code: 'def f():\n    raise ValueError("boom")\n\nprint("before")\nf()\n' });
        assertEq(r.isError, true, 'isError');
        const sc = r.structuredContent;
        assertEq(sc.exit_code, 1, 'exit_code');
        assertEq(sc.stdout, 'before\n', 'stdout');
        assertEq(sc.error.name, 'ValueError', 'error.name');
        assertEq(sc.error.value, 'boom', 'error.value');
        assert(sc.error.traceback.includes('raise ValueError("boom")'), `traceback: ${sc.error.traceback}`);
        const text = textOf(r);
        assert(text.includes('Traceback (most recent call last)'), `traceback in text: ${text}`);
        assert(text.includes('ValueError: boom'), text);
    },

    async test05_syntax_error() {
        const r = await call({ code: 'print(1 +)' });
        assertEq(r.isError, true, 'isError');
        assertEq(r.structuredContent.error.name, 'SyntaxError', 'error.name');
    },

    async test06_timeout() {
        const r = await call({ code: 'import time\nprint("start", flush=True)\ntime.sleep(30)\nprint("end")', timeout: 1 });
        assertEq(r.isError, true, 'isError');
        const sc = r.structuredContent;
        assertEq(sc.timed_out, true, 'timed_out');
        assertEq(sc.exit_code, 124, 'exit_code');
        assertEq(sc.killed_reason, 'timeout', 'killed_reason');
        assert(sc.execution_time < 10, `killed near 1 s, took ${sc.execution_time}`);
        assert(!sc.stdout.includes('end'), 'did not finish');
        assert(textOf(r).includes('timed out after 1 s'), textOf(r));
    },

    async test07_timeout_above_maximum() {
        // The host's --timeout is the maximum: asking for more is a tool error, not a run.
        const r = await call({ code: 'print("ran")', timeout: 21 });
        assertEq(r.isError, true, 'isError');
        assert(!r.structuredContent, 'no structuredContent: nothing ran');
        assert(/timeout/.test(textOf(r)) && /maximum/.test(textOf(r)), textOf(r));
        const ok = await call({ code: 'print("ran")', timeout: 20 });
        assert(!ok.isError && ok.structuredContent.stdout === 'ran\n', 'the maximum itself is allowed');
    },

    async test08_bad_arguments() {
        // Protocol 2025-11-25: input validation errors are tool errors the model can read.
        const r = await main_.client.callTool({ name: 'execute_python', arguments: { code: 5 } });
        assertEq(r.isError, true, 'isError');
        assert(textOf(r).includes("'code'"), textOf(r));
        let threw = null;
        try {
            await main_.client.callTool({ name: 'no_such_tool', arguments: { code: '1' } });
        } catch (e) {
            threw = e;
        }
        assert(threw && threw.code === -32602, `unknown tool is -32602: ${threw}`);
    },

    async test09_matplotlib_plot() {
        const code = [
            'import matplotlib',
            'matplotlib.use("Agg")',
            'import matplotlib.pyplot as plt',
            'plt.plot([0, 1, 2, 3], [0, 1, 4, 9])',
            'plt.title("squares")',
            'plt.savefig("plot.png")',
            'with open("data.csv", "w") as f:',
            '    f.write("x,y\\n0,0\\n1,1\\n")',
            'print("saved")',
        ].join('\n');
        const r = await call({ code });
        assert(!r.isError, textOf(r));
        const images = r.content.filter((c) => c.type === 'image');
        assertEq(images.length, 1, 'one image');
        assertEq(images[0].mimeType, 'image/png', 'mimeType');
        const png = Buffer.from(images[0].data, 'base64');
        assert(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'PNG magic');
        assert(png.length > 1000, `a real plot, ${png.length} bytes`);
        const files = r.structuredContent.files;
        const plot = files.find((f) => f.path === 'plot.png');
        assert(plot && plot.size === png.length && plot.data === undefined, 'plot listed, bytes not duplicated');
        const csv = files.find((f) => f.path === 'data.csv');
        assert(csv && csv.size === 12, `data.csv listed: ${JSON.stringify(files)}`);
        const text = textOf(r);
        assert(text.includes('data.csv') && text.includes('12 bytes'), `other files by name and size: ${text}`);
    },

    async test10_svg_image() {
        const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>';
        const r = await call({ code: `open("pic.svg", "w").write(${JSON.stringify(svg)})` });
        const images = r.content.filter((c) => c.type === 'image');
        assertEq(images.length, 1, 'one image');
        assertEq(images[0].mimeType, 'image/svg+xml', 'mimeType');
        assertEq(Buffer.from(images[0].data, 'base64').toString(), svg, 'svg bytes');
    },

    async test11_parallel_calls() {
        const n = 8;
        const calls = [];
        for (let i = 0; i < n; i++)
            calls.push(call({ code: `import time\ntime.sleep(0.3)\nprint(${i} * 1000 + 7)` }));
        const results = await Promise.all(calls);
        results.forEach((r, i) => {
            assert(!r.isError, `call ${i}: ${textOf(r)}`);
            assertEq(r.structuredContent.stdout, `${i * 1000 + 7}\n`, `call ${i} got its own reply`);
        });
    },

    async test12_unicode_and_binary_output() {
        const r = await call({ code: 'import sys\nprint("héllo ✓ 日本")\nsys.stdout.flush()\nsys.stdout.buffer.write(b"\\xff\\xfe bad\\n")' });
        assert(!r.isError, textOf(r));
        assert(r.structuredContent.stdout.startsWith('héllo ✓ 日本\n'), r.structuredContent.stdout);
        assert(r.structuredContent.stdout.includes('\ufffd'), 'invalid UTF-8 replaced');
    },

    async test12b_unicode_file_names_and_long_errors() {
        const r = await call({ code: 'open("résumé ✓.txt", "w").write("x")\nraise RuntimeError("é" * 3000)' });
        assertEq(r.isError, true, 'isError');
        assertEq(r.structuredContent.error.value, 'é'.repeat(3000), 'the whole value in structuredContent');
        const text = textOf(r);
        assert(text.includes('résumé ✓.txt'), `file name in text: ${text.slice(-300)}`);
        assert(text.includes('RuntimeError: éé'), 'the error in text');
    },

    async test13_cancellation() {
        // A server of its own, with a host workspace so that the test can see the files.
        const ws = tmpdir('cancel');
        const c = await connect(['--workspace', ws, '--timeout', '30']);
        try {
            const ac = new AbortController();
            const code = 'import time\nopen("started", "w").close()\ntime.sleep(4)\nopen("finished", "w").close()\n';
            const p = c.client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { signal: ac.signal });
            await waitFor(() => fs.existsSync(path.join(ws, 'started')), 15000, 'the run to start');
            ac.abort('test cancels');
            let err = null;
            try {
                await p;
            } catch (e) {
                err = e;
            }
            assert(err, 'the aborted call rejects');
            await waitFor(() => c.stderr().includes('cancelled by the client'), 5000, 'the server to log the cancellation');
            await sleep(5000); // past the moment the program would have finished
            assert(!fs.existsSync(path.join(ws, 'finished')), 'the run was killed before it finished');
            // The connection is still good.
            const r = await c.client.callTool({ name: 'execute_python', arguments: { code: 'print("after")' } });
            assertEq(r.structuredContent.stdout, 'after\n', 'a call after the cancellation');
        } finally {
            await c.client.close();
            fs.rmSync(ws, { recursive: true, force: true });
        }
    },

    async test14_ping() {
        await main_.client.ping();
    },

    async test99_close() {
        const pid = main_.transport.pid;
        await main_.client.close();
        // EOF on stdin: the server exits on its own (the SDK would SIGTERM it after 2 s).
        await waitFor(() => {
            try {
                process.kill(pid, 0);
                return false;
            } catch (e) {
                return true;
            }
        }, 5000, 'the server to exit');
        const log = main_.stderr();
        assert(!/SIGTERM|Terminated/.test(log), `exited on EOF, not a signal:\n${log}`);
    },
};

await main(tests);
