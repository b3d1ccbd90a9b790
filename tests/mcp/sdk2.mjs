// SPDX-License-Identifier: MIT
// `execbox mcp` driven by the official MCP TypeScript SDK 2.x client package
// (@modelcontextprotocol/client, which needs Node >= 20): the handshake (plain, and with the
// client's automatic version negotiation, whose server/discover probe must fall back to the
// 2025 handshake), tools/list, good and failing code with structuredContent checked against
// the outputSchema, an image, parallel calls and a cancellation.
import fs from 'node:fs';
import path from 'node:path';
import {
    EXECBOX, SKIP, assert, assertEq, main, serverArgs, sdkRequire, sleep, textOf, tmpdir, waitFor,
} from './lib.mjs';

const major = Number(process.versions.node.split('.')[0]);
if (major < 20) {
    console.log(`SKIP: @modelcontextprotocol/client 2.x needs Node >= 20; this is ${process.versions.node}`);
    process.exit(SKIP);
}
const req = sdkRequire();
const { Client, LATEST_PROTOCOL_VERSION } = req('@modelcontextprotocol/client');
const { StdioClientTransport } = req('@modelcontextprotocol/client/stdio');
const VERSION = JSON.parse(fs.readFileSync(
    path.join(process.env.MCP_NODE_DIR, 'node_modules/@modelcontextprotocol/client/package.json'))).version;

async function connect(extra, clientOptions = {}) {
    const transport = new StdioClientTransport({
        command: EXECBOX, args: serverArgs(extra), env: { ...process.env }, stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr.on('data', (d) => { stderr += d; });
    const client = new Client({ name: 'execbox-sdk2-test', version: '1.0.0' }, clientOptions);
    await client.connect(transport);
    return { client, transport, stderr: () => stderr };
}

let c = null;
const call = (args, opts) => c.client.callTool({ name: 'execute_python', arguments: args }, opts);

const tests = {
    async test01_connect() {
        c = await connect(['--timeout', '20', '--jobs', '4']);
        assertEq(c.client.getServerVersion().name, 'execbox', 'serverInfo.name');
        assert(c.client.getServerCapabilities().tools, 'tools capability');
        console.log(`  client ${VERSION}, newest protocol ${LATEST_PROTOCOL_VERSION}`);
    },

    async test02_list_tools() {
        const { tools } = await c.client.listTools();
        assertEq(tools.length, 1, 'one tool');
        assertEq(tools[0].name, 'execute_python', 'name');
        assert(tools[0].outputSchema && tools[0].inputSchema, 'schemas');
    },

    async test03_good_code() {
        const r = await call({ code: 'print(sum(range(101)))' });
        assert(!r.isError, textOf(r));
        assertEq(r.structuredContent.stdout, '5050\n', 'stdout');
        assertEq(r.structuredContent.exit_code, 0, 'exit_code');
        assert(textOf(r).includes('5050'), 'text');
    },

    async test04_failing_code() {
        const r = await call({ code: 'import json\njson.loads("{")' });
        assertEq(r.isError, true, 'isError');
        assertEq(r.structuredContent.error.name, 'json.decoder.JSONDecodeError', 'error.name');
        assert(textOf(r).includes('Traceback'), textOf(r));
    },

    async test05_timeout() {
        const r = await call({ code: 'while True: pass', timeout: 1 });
        assertEq(r.isError, true, 'isError');
        assertEq(r.structuredContent.timed_out, true, 'timed_out');
        assertEq(r.structuredContent.exit_code, 124, 'exit_code');
    },

    async test06_image() {
        const code = 'import matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\n' +
            'plt.bar(["a", "b"], [3, 5])\nplt.savefig("bars.png")\n';
        const r = await call({ code });
        assert(!r.isError, textOf(r));
        const img = r.content.find((x) => x.type === 'image');
        assert(img && img.mimeType === 'image/png', 'image content');
        assertEq(Buffer.from(img.data, 'base64').subarray(1, 4).toString(), 'PNG', 'PNG bytes');
    },

    async test07_parallel() {
        const rs = await Promise.all([...Array(8).keys()].map((i) => call({ code: `print(${i} ** 2)` })));
        rs.forEach((r, i) => assertEq(r.structuredContent.stdout, `${i * i}\n`, `call ${i}`));
    },

    async test08_cancellation() {
        const ws = tmpdir('cancel2');
        const k = await connect(['--workspace', ws]);
        try {
            const ac = new AbortController();
            const code = 'import time\nopen("started", "w").close()\ntime.sleep(4)\nopen("finished", "w").close()\n';
            const p = k.client.callTool({ name: 'execute_python', arguments: { code } }, { signal: ac.signal });
            await waitFor(() => fs.existsSync(path.join(ws, 'started')), 15000, 'the run to start');
            ac.abort('test cancels');
            let err = null;
            try {
                await p;
            } catch (e) {
                err = e;
            }
            assert(err, 'the aborted call rejects');
            await waitFor(() => k.stderr().includes('cancelled by the client'), 5000, 'the server to see it');
            await sleep(5000);
            assert(!fs.existsSync(path.join(ws, 'finished')), 'the run was killed before it finished');
        } finally {
            await k.client.close();
            fs.rmSync(ws, { recursive: true, force: true });
        }
    },

    async test09_auto_version_negotiation() {
        // 'auto' probes with server/discover (the 2026 era) first; we answer -32601, and the
        // client must fall back to the 2025 initialize handshake and work normally.
        const k = await connect([], { versionNegotiation: { mode: 'auto' } });
        try {
            const r = await k.client.callTool({ name: 'execute_python', arguments: { code: 'print("negotiated")' } });
            assertEq(r.structuredContent.stdout, 'negotiated\n', 'a call after negotiation');
        } finally {
            await k.client.close();
        }
    },

    async test99_close() {
        await c.client.close();
    },
};

await main(tests);
