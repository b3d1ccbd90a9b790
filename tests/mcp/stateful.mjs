// SPDX-License-Identifier: MIT
// `execbox mcp --stateful` driven by the official MCP TypeScript SDK 1.x client (which checks
// every structuredContent against the tool's outputSchema): a second call sees the first
// call's variables and gets the last expression's value as the main result, a failing call is
// rolled back, a cancelled call too, reset_session forgets everything, a matplotlib figure comes
// back as image content, an image saved in /workspace comes back once (and again when
// rewritten), not with every later call, and a session that expired is replaced with a note
// that the state was lost.
import {
    EXECBOX, SKIP, assert, assertEq, main, serverArgs, sdkRequire, sleep, textOf,
} from './lib.mjs';

const req = sdkRequire();
const { Client } = req('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = req('@modelcontextprotocol/sdk/client/stdio.js');

async function connect(extra) {
    const transport = new StdioClientTransport({
        command: EXECBOX, args: serverArgs(['--stateful', ...extra]), env: { ...process.env },
        stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr.on('data', (d) => { stderr += d; });
    const client = new Client({ name: 'execbox-stateful-test', version: '1.0.0' }, { capabilities: {} });
    await client.connect(transport);
    return { client, stderr: () => stderr };
}

let conn = null;

async function call(code, opts, c = conn) {
    return c.client.callTool({ name: 'execute_python', arguments: { code } }, undefined, opts);
}

function mainResult(r) {
    return (r.structuredContent.results || []).find((x) => x.is_main_result);
}

const tests = {
    async test01_tools() {
        // Sessions live in the jail.
        const b = process.env.EXECBOX_TEST_BACKEND;
        if (b && b !== 'jail') return SKIP;
        conn = await connect(['--timeout', '20']);
        assert(conn.client.getInstructions().includes('keeps its state between calls'), 'instructions');
        const { tools } = await conn.client.listTools();
        assertEq(tools.map((t) => t.name).join(','), 'execute_python,reset_session', 'tools');
        const t = tools[0];
        assert(t.description.includes('State persists between calls'), 'the description says state persists');
        assert(t.description.includes('rolled back') && t.description.includes('as they were before'),
               'the description says a failed call is rolled back');
        assertEq(t.outputSchema.properties.execution_count.type, 'integer', 'outputSchema.execution_count');
        assertEq(t.outputSchema.properties.rolled_back.type, 'boolean', 'outputSchema.rolled_back');
        assertEq(tools[1].inputSchema.type, 'object', 'reset_session inputSchema');
        assertEq(tools[1].annotations.destructiveHint, true, 'reset_session is destructive');
    },

    async test02_state_kept() {
        if (!conn) return SKIP;
        const r1 = await call('x = 41');
        assert(!r1.isError, `x = 41: ${textOf(r1)}\n${conn.stderr()}`);
        const n1 = r1.structuredContent.execution_count;
        assert(Number.isInteger(n1) && n1 >= 1, `execution_count ${n1}`);
        assertEq(r1.structuredContent.rolled_back, false, 'rolled_back');
        const r2 = await call('x + 1');
        assert(!r2.isError, `x + 1: ${textOf(r2)}`);
        assertEq(r2.structuredContent.execution_count, n1 + 1, 'execution_count counts cells');
        const m = mainResult(r2);
        assert(m, `a main result: ${JSON.stringify(r2.structuredContent.results)}`);
        assertEq(m.text, '42', 'the main result');
        assert(textOf(r2).includes('--- result ---\n42\n'), `the text shows it: ${textOf(r2)}`);
        assert(textOf(r2).includes(`execution_count: ${n1 + 1}`), 'the text has the count');
    },

    async test03_failed_call_rolls_back() {
        if (!conn) return SKIP;
        const r = await call('x = 0\ny = 1\n1 / 0');
        assert(r.isError, 'isError');
        assertEq(r.structuredContent.rolled_back, true, 'rolled_back');
        assertEq(r.structuredContent.error.name, 'ZeroDivisionError', 'error.name');
        assert(textOf(r).includes('rolled back'), `the text says so: ${textOf(r)}`);
        const r2 = await call('print(x, "y" in globals())');
        assertEq(r2.structuredContent.stdout, '41 False\n', 'x and y as before the failed call');
    },

    async test04_cancelled_call_rolls_back() {
        if (!conn) return SKIP;
        const ac = new AbortController();
        const p = call('x = 5\nimport time\ntime.sleep(60)', { signal: ac.signal });
        await sleep(1500);
        ac.abort('test');
        let rejected = false;
        try { await p; } catch (e) { rejected = true; }
        assert(rejected, 'the aborted call rejects');
        const r = await call('x');
        assertEq(mainResult(r)?.text, '41', 'x after the cancelled call');
    },

    async test05_plot_as_image() {
        if (!conn) return SKIP;
        const r = await call('import matplotlib.pyplot as plt\nplt.plot([0, 1, 2, 3], [0, 1, 4, 9])\nplt.show()');
        assert(!r.isError, `plot: ${textOf(r)}`);
        const images = r.content.filter((c) => c.type === 'image');
        assertEq(images.length, 1, `one image: ${JSON.stringify(r.content.map((c) => c.type))}`);
        assertEq(images[0].mimeType, 'image/png', 'mimeType');
        const png = Buffer.from(images[0].data, 'base64');
        assertEq(png.subarray(0, 8).toString('hex'), '89504e470d0a1a0a', 'PNG signature');
        assert(png.length > 1000, `a real plot, ${png.length} bytes`);
        const withPng = (r.structuredContent.results || []).filter((x) => x.png);
        assertEq(withPng.length, 0, 'the image bytes are not repeated in structuredContent');
        assert(textOf(r).includes('image/png: shown below as an image'), `the text says so: ${textOf(r)}`);
    },

    async test05b_saved_image_sent_once() {
        // The workspace persists, so every later result lists a.png again: only the cell that
        // wrote it (or rewrote it with other bytes) attaches it.
        if (!conn) return SKIP;
        const save = (ys) => call('import matplotlib\nmatplotlib.use("Agg")\n'
            + 'import matplotlib.pyplot as plt\n'
            + `fig = plt.figure()\nplt.plot([0, 1, 2, 3], ${JSON.stringify(ys)})\n`
            + 'fig.savefig("/workspace/a.png")\nplt.close(fig)');
        const images = (r) => r.content.filter((c) => c.type === 'image');
        const listed = (r) => (r.structuredContent.files || []).some((f) => f.path === 'a.png');
        const r1 = await save([0, 1, 4, 9]);
        assert(!r1.isError && listed(r1), `save: ${textOf(r1)}`);
        assertEq(images(r1).length, 1, `the new a.png: ${JSON.stringify(r1.content.map((c) => c.type))}`);
        const png1 = images(r1)[0].data;
        assert(/a\.png \(image\/png, [^)]*\), shown below as an image/.test(textOf(r1)), textOf(r1));
        for (const code of ['1+1', 'print("hi")']) {
            const r = await call(code);
            assert(!r.isError && listed(r), `${code}: ${textOf(r)}`);
            assertEq(images(r).length, 0, `${code}: no image, a.png is unchanged: ${textOf(r)}`);
            assert(!textOf(r).includes('shown below'), `${code}: the text attaches nothing: ${textOf(r)}`);
            assert(textOf(r).includes('unchanged since an earlier reply showed it'),
                   `${code}: the text says why a.png is not shown: ${textOf(r)}`);
        }
        const r4 = await save([9, 4, 1, 0]);
        assert(!r4.isError, `rewrite: ${textOf(r4)}`);
        assertEq(images(r4).length, 1, `the changed a.png: ${textOf(r4)}`);
        assert(images(r4)[0].data !== png1, 'the new bytes');
        const r5 = await call('print("hi")');
        assertEq(images(r5).length, 0, `then not again: ${textOf(r5)}`);
    },

    async test06_reset_session() {
        if (!conn) return SKIP;
        const r = await conn.client.callTool({ name: 'reset_session', arguments: {} });
        assert(!r.isError, `reset: ${textOf(r)}`);
        assert(textOf(r).includes('reset'), textOf(r));
        const r2 = await call('x');
        assert(r2.isError, 'x is gone');
        assertEq(r2.structuredContent.error.name, 'NameError', 'error.name');
        assert(!textOf(r2).includes('state was lost'), 'a reset is no loss');
        const bad = await conn.client.callTool({ name: 'reset_session', arguments: { now: true } });
        assert(bad.isError && textOf(bad).includes("unknown argument 'now'"), textOf(bad));
    },

    async test07_expired_session_is_replaced() {
        if (!conn) return SKIP;
        const c = await connect(['--session-idle', '1']);
        try {
            const r1 = await call('x = 41', undefined, c);
            assert(!r1.isError, textOf(r1));
            await sleep(2500);
            const r2 = await call('x', undefined, c);
            assert(r2.isError, 'x is gone with the expired session');
            assert(textOf(r2).includes("the session's state was lost"), `the text says so: ${textOf(r2)}`);
            assertEq(r2.structuredContent.state_lost, true, 'structuredContent.state_lost');
            const r3 = await call('x = 1', undefined, c);
            assert(!r3.isError && !textOf(r3).includes('state was lost'), 'told once');
        } finally {
            await c.client.close();
        }
    },

    async test99_close() {
        if (!conn) return SKIP;
        await conn.client.close();
    },
};

await main(tests);
