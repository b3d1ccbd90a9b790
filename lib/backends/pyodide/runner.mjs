// SPDX-License-Identifier: MIT
// runner.mjs - runs one Python program in Pyodide (CPython compiled to WebAssembly) under Node,
// the way `python3 FILE` runs it: the program's stdout and stderr are our fds 1 and 2 (raw
// bytes), stdin is our fd 0, the working directory is /workspace, an uncaught exception prints
// CPython's traceback and exits 1, SystemExit(n) exits n.
//
// This is NOT a sandbox by itself: Pyodide hands Python the whole JS runtime (`import js`,
// `pyodide.ffi`), and through it Node's process object. execbox only ever runs it inside the
// jail (lib/backends/pyodide.c), whose walls hold whatever the code reaches through JS.
//
// Offline: only the standard library in the npm package is available; a package Pyodide would
// fetch from its CDN (micropip among them) fails to import with a message saying so.
//
// Warm start (the jail's warm argv, lib/backends/pyodide.c): Pyodide is loaded and everything
// up to the program made ready, then the runner waits for one byte on fd 3; the program and its
// stdin are files that arrive meanwhile. Then it runs exactly as a cold start would, once: a
// warm runner serves one run and exits, like every other sandbox.
//
// Usage: node runner.mjs PROGRAM.py
//        node runner.mjs -c warm PROGRAM.py STDIN_FILE PRELOAD
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const pyodideDir = path.join(here, "node_modules", "pyodide");
const warm = process.argv[2] === "-c";
const program = warm ? process.argv[4] : process.argv[2];
if (!program || (warm && (process.argv[3] !== "warm" || process.argv.length !== 7))) {
    fs.writeSync(2, "usage: node runner.mjs PROGRAM.py | -c warm PROGRAM.py STDIN PRELOAD\n");
    process.exit(2);
}
let stdinFd = 0;

// Raw byte streams: what Python writes reaches our fds unchanged (no line buffering, no
// re-encoding), and stdin is read as bytes on demand.
// Node may have made the pipes non-blocking: a full pipe (EAGAIN) is waited out here, never
// reported to Python (which would write the same bytes again).
const nap = new Int32Array(new SharedArrayBuffer(4));
function writeAll(fd, buf) {
    let off = 0;
    while (off < buf.length) {
        try {
            off += fs.writeSync(fd, buf, off, buf.length - off);
        } catch (e) {
            if (e.code !== "EAGAIN") throw e;
            Atomics.wait(nap, 0, 0, 1);
        }
    }
    return buf.length;
}
function readStdin(buf) {
    for (;;) {
        try {
            return fs.readSync(stdinFd, buf, 0, buf.length, null);
        } catch (e) {
            if (e.code === "EOF") return 0;
            if (e.code !== "EAGAIN") throw e;
            Atomics.wait(nap, 0, 0, 1);
        }
    }
}

const { loadPyodide } = await import(path.join(pyodideDir, "pyodide.mjs"));
const py = await loadPyodide({
    indexURL: pyodideDir + "/",
    stdout: undefined,
    stderr: undefined,
    checkAPIVersion: true,
});
py.setStdout({ write: (b) => writeAll(1, b), isatty: false });
py.setStderr({ write: (b) => writeAll(2, b), isatty: false });
py.setStdin({ read: readStdin, isatty: false });

// The sandbox's directories, seen from inside the WebAssembly file system: /workspace (the
// working directory; files left there are listed in the result), /tmp, and the program's own.
const FS = py.FS;
for (const dir of ["/workspace", "/tmp", path.dirname(program)]) {
    if (!fs.existsSync(dir)) continue;
    try {
        FS.mkdirTree(dir);
    } catch (e) {
        /* exists */
    }
    FS.mount(FS.filesystems.NODEFS, { root: dir }, dir);
}
if (fs.existsSync("/workspace")) FS.chdir("/workspace");

// The packages Pyodide lists in its lock file but does not ship in the npm package.
const lock = JSON.parse(fs.readFileSync(path.join(pyodideDir, "pyodide-lock.json"), "utf8"));
const offline = new Set();
for (const [name, p] of Object.entries(lock.packages || {})) {
    if (p.package_type === "cpython_module") continue; // unvendored stdlib: said below
    for (const m of p.imports || []) offline.add(m);
    offline.add(name);
}
const unvendored = new Set();
for (const p of Object.values(lock.packages || {}))
    if (p.package_type === "cpython_module") for (const m of p.imports || []) unvendored.add(m);

py.globals.set("_execbox_offline", py.toPy([...offline]));
py.globals.set("_execbox_unvendored", py.toPy([...unvendored]));
py.globals.set("_execbox_program", program);
const main = fs.readFileSync(path.join(here, "main.py"), "utf8");

if (warm) {
    // The preload: standard-library modules only (offline), failures ignored, as Python's own
    // warm start does.
    py.globals.set("_execbox_preload", process.argv[6]);
    py.runPython(
        "_m = None\nfor _m in filter(None, _execbox_preload.split(',')):\n" +
            "    try:\n        __import__(_m)\n    except Exception:\n        pass\n" +
            "del _m, _execbox_preload\n",
    );
    // The go byte; EOF means the sandbox is being discarded unused.
    const go = Buffer.alloc(1);
    for (;;) {
        try {
            if (fs.readSync(3, go, 0, 1, null) !== 1) process.exit(0);
            break;
        } catch (e) {
            if (e.code === "EOF") process.exit(0);
            if (e.code !== "EAGAIN") throw e;
            Atomics.wait(nap, 0, 0, 1);
        }
    }
    fs.closeSync(3);
    stdinFd = fs.openSync(process.argv[5], "r");
}
const rc = py.runPython(main);
process.exitCode = rc;
