# SPDX-License-Identifier: MIT
"""Every failed run names its failure in `error` (docs/result.md): a program killed by a signal
("Signal", "killed by SIGSEGV (segmentation fault)"), Python's uncaught KeyboardInterrupt, node's
uncaught errors and a non-zero exit without an exception ("ExitStatus", "exit status N"), in
every language, on the jail (cold, warm, and a session cell for Python) and the subprocess
backend; while our own kills keep their own names."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import SkipTest, Tests, eq, run_json  # noqa: E402

SEGV = {"name": "Signal", "value": "killed by SIGSEGV (segmentation fault)", "traceback": ""}
# Cold and warm on the jail, the subprocess backend, and (Python) a session cell (--rich).
BACKENDS = (["-b", "jail"], ["-b", "subprocess"], ["-b", "jail", "--warm"],
            ["-b", "jail", "--rich"])


def exit_status(n):
    return {"name": "ExitStatus", "value": f"exit status {n}", "traceback": ""}


class RunErrorTests(Tests):
    def rj(self, *args):
        r, p = run_json(list(args))
        eq(p.returncode, r["exit_code"], f"execbox's status for {args}")
        return r

    def node(self, backend, code):
        r = self.rj(*backend, "-l", "javascript", "-c", code)
        if r["error"] and r["error"]["name"] == "SandboxError":
            raise SkipTest(f"node does not run in the sandbox here: {r['error']['value']}")
        return r

    def test_segfault(self):
        for b in BACKENDS:
            r = self.rj(*b, "-c", "import ctypes; ctypes.string_at(0)")
            eq((r["exit_code"], r["signal"], r["killed_reason"]), (139, 11, None), b)
            eq(r["error"], SEGV, b)

    def test_signal_in_bash(self):
        for b in BACKENDS[:2]:
            r = self.rj(*b, "-l", "bash", "-c", "kill -ABRT $$")
            eq((r["exit_code"], r["signal"]), (134, 6), b)
            eq(r["error"], {"name": "Signal", "value": "killed by SIGABRT (aborted)",
                            "traceback": ""}, b)

    def test_keyboard_interrupt(self):
        for b in BACKENDS:
            r = self.rj(*b, "-c", "print('x')\nraise KeyboardInterrupt")
            eq(r["error"]["name"], "KeyboardInterrupt", f"{b}: {r['error']}")
            eq(r["error"]["value"], "", b)
            assert r["error"]["traceback"].startswith("Traceback (most recent call last):"), r
            assert r["error"]["traceback"].endswith("\nKeyboardInterrupt"), r

    def test_bare_exceptions(self):
        for exc in ("SystemError", "MemoryError"):
            r = self.rj("-c", f"raise {exc}")
            eq(r["exit_code"], 1)
            eq((r["error"]["name"], r["error"]["value"]), (exc, ""), r["error"])

    def test_javascript_error(self):
        for b in BACKENDS[:2]:
            r = self.node(b, 'console.log(1)\nthrow new Error("boom")')
            eq(r["exit_code"], 1, b)
            eq((r["error"]["name"], r["error"]["value"]), ("Error", "boom"), b)
            tb = r["error"]["traceback"]
            # The program's path: /code/main.js in the jail, a temporary directory's otherwise.
            assert re.match(r'/\S*/main\.js:2\nthrow new Error\("boom"\)\n\^\n\nError: boom\n'
                            r'    at ', tb), tb
            assert "Node.js v" not in tb, tb
            r = self.node(b, "function f() { return null.x }\nf()")
            eq(r["error"]["name"], "TypeError", b)
            eq(r["error"]["value"], "Cannot read properties of null (reading 'x')", b)
            r = self.node(b, 'require("fs").readFileSync("/nope")')
            eq((r["error"]["name"], r["error"]["value"]),
               ("Error", "ENOENT: no such file or directory, open '/nope'"), b)
            assert r["error"]["traceback"].startswith("node:"), r["error"]
            r = self.node(b, "throw 42")
            eq((r["error"]["name"], r["error"]["value"]), ("Uncaught", "42"), b)
            r = self.node(b, "process.exit(4)")
            eq(r["error"], exit_status(4), b)

    def test_exit_status(self):
        for b in BACKENDS[:2]:
            r = self.rj(*b, "-l", "bash", "-c", "exit 3")
            eq(r["error"], exit_status(3), b)
            r = self.rj(*b, "-l", "bash", "-c", "ls /nonexistent")
            eq(r["exit_code"], 2, b)
            eq(r["error"], exit_status(2), b)
            r = self.rj(*b, "-l", "bash", "-c", "echo fine")
            eq((r["exit_code"], r["error"]), (0, None), b)
        for b in BACKENDS:
            r = self.rj(*b, "-c", "import sys; sys.exit(3)")
            eq(r["error"], exit_status(3), b)
            r = self.rj(*b, "-c", "import sys; sys.exit('a message')")
            eq((r["stderr"], r["error"]), ("a message\n", exit_status(1)), b)
            r = self.rj(*b, "-c", "import sys; sys.exit(0)")
            eq(r["error"], None, b)

    def test_our_kills_keep_their_names(self):
        r = self.rj("--timeout", "1", "-l", "bash", "-c", "sleep 30")
        eq((r["killed_reason"], r["error"]["name"]), ("timeout", "Timeout"))
        r = self.rj("-m", "64M", "-t", "20", "-c",
                    "b = []\nwhile True: b.append(bytearray(8 << 20))")
        eq((r["killed_reason"], r["error"]["name"]), ("memory", "MemoryLimit"), r["error"])


if __name__ == "__main__":
    RunErrorTests().main()
