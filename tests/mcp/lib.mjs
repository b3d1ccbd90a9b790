// SPDX-License-Identifier: MIT
// Shared helpers of the MCP conformance tests: where the server is, how to start it, how to
// load the pinned SDK packages installed by run.sh, and a minimal runner that prints
// "N passed, N failed" like the Python integration tests.
import { createRequire } from 'node:module';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const SOURCE = process.env.EXECBOX_SOURCE || path.join(here, '..', '..');
export const EXECBOX = process.env.EXECBOX || path.join(SOURCE, 'build', 'execbox');
export const SKIP = 77;

// The backend under test: the default one unless EXECBOX_TEST_BACKEND names another.
export function serverArgs(extra = []) {
    const b = process.env.EXECBOX_TEST_BACKEND;
    // EXECBOX_MCP_EXTRA: more server flags for a whole suite (e.g. the warm pool).
    const more = (process.env.EXECBOX_MCP_EXTRA || '').split(' ').filter(Boolean);
    return ['mcp', ...(b ? ['--backend', b] : []), ...more, ...extra];
}

// require() rooted at the node_modules that run.sh installed (the packages' CommonJS builds).
export function sdkRequire() {
    const dir = process.env.MCP_NODE_DIR;
    if (!dir) throw new Error('MCP_NODE_DIR is not set: run the tests through run.sh');
    return createRequire(path.join(dir, 'package.json'));
}

// A host directory to mount as /workspace; world-writable, as a sandbox may map the guest to
// another uid.
export function tmpdir(tag) {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), `execbox-mcp-${tag}-`));
    fs.chmodSync(d, 0o777);
    return d;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(pred, ms, what) {
    const end = Date.now() + ms;
    while (Date.now() < end) {
        if (await pred()) return;
        await sleep(50);
    }
    throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}

export function assert(cond, msg) {
    if (!cond) throw new Error(`assertion failed: ${msg}`);
}

export function assertEq(got, want, msg) {
    if (got !== want)
        throw new Error(`${msg}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

// The text of a CallToolResult's first text content.
export function textOf(res) {
    const t = (res.content || []).find((c) => c.type === 'text');
    return t ? t.text : '';
}

// A server started by hand: lines of stdout parsed as JSON (every line must be JSON: stdout
// carries protocol frames only), stderr kept for failure reports.
export class RawServer {
    constructor(extraArgs = [], opts = {}) {
        this.proc = spawn(EXECBOX, serverArgs(extraArgs), { stdio: ['pipe', 'pipe', 'pipe'], ...opts });
        this.stderr = '';
        this.messages = [];
        this.waiters = [];
        this.exited = new Promise((resolve) => this.proc.on('exit', (code, signal) => resolve({ code, signal })));
        this.proc.stderr.setEncoding('utf8');
        this.proc.stderr.on('data', (d) => { this.stderr += d; });
        let buf = '';
        this.proc.stdout.setEncoding('utf8');
        this.proc.stdout.on('data', (d) => {
            buf += d;
            let i;
            while ((i = buf.indexOf('\n')) >= 0) {
                const line = buf.slice(0, i);
                buf = buf.slice(i + 1);
                let m;
                try {
                    m = JSON.parse(line);
                } catch (e) {
                    m = { notJson: line };
                }
                this.messages.push(m);
                this.wake();
            }
        });
        this.proc.stdin.on('error', () => {});
    }
    wake() {
        for (const w of this.waiters.splice(0)) w();
    }
    write(s) {
        return new Promise((resolve, reject) => this.proc.stdin.write(s, (e) => (e ? reject(e) : resolve())));
    }
    send(obj) {
        return this.write(JSON.stringify(obj) + '\n');
    }
    // The next message satisfying pred (removed from the queue), waiting up to ms.
    async next(pred = () => true, ms = 30000) {
        const end = Date.now() + ms;
        for (;;) {
            const i = this.messages.findIndex(pred);
            if (i >= 0) return this.messages.splice(i, 1)[0];
            const left = end - Date.now();
            if (left <= 0) throw new Error(`no matching message within ${ms} ms; stderr:\n${this.stderr}`);
            await new Promise((resolve) => {
                const t = setTimeout(resolve, left);
                this.waiters.push(() => { clearTimeout(t); resolve(); });
            });
        }
    }
    reply(id, ms) {
        return this.next((m) => !Array.isArray(m) && m.id === id, ms);
    }
    async request(id, method, params, ms) {
        await this.send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
        return this.reply(id, ms);
    }
    async initialize(version = '2025-11-25') {
        const r = await this.request(0, 'initialize', {
            protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw-test', version: '1' },
        });
        await this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
        return r;
    }
    async close(ms = 20000) {
        this.proc.stdin.end();
        const t = setTimeout(() => this.proc.kill('SIGKILL'), ms);
        const r = await this.exited;
        clearTimeout(t);
        return r;
    }
}

// Runs every exported async function whose name starts with "test" from the given module
// object, in order (or only those named on the command line).
export async function main(tests) {
    const only = process.argv.slice(2);
    let passed = 0, failed = 0, skipped = 0;
    for (const [name, fn] of Object.entries(tests)) {
        if (!name.startsWith('test') || (only.length && !only.includes(name))) continue;
        const t0 = Date.now();
        try {
            const r = await fn();
            if (r === SKIP) {
                skipped++;
                console.log(`skip ${name}`);
            } else {
                passed++;
                console.log(`ok   ${name} (${Date.now() - t0} ms)`);
            }
        } catch (e) {
            failed++;
            console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
        }
    }
    console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
    process.exit(failed ? 1 : passed === 0 && skipped ? SKIP : 0);
}
