# SPDX-License-Identifier: MIT
"""Integration: the subprocess backend end to end through `execbox run --json`: result
records for exits, signals, timeouts and tracebacks; nothing left behind after timeouts and
daemons; output caps; invalid UTF-8; stdin; a 1 MB program; sandbox errors; the workspace;
parallel runs."""
import concurrent.futures
import json
import os
import shutil
import signal
import sys
import tempfile

# (Not named subprocess.py: a module of that name here would shadow the standard library's for
# every script in this directory.)
sys.path.insert(0, os.path.dirname(__file__))
from common import Tests, run, run_json  # noqa: E402

SP = ["-b", "subprocess"]


def check(cond, msg=""):
    if not cond:
        raise AssertionError(msg)


def eq(a, b, what=""):
    if a != b:
        raise AssertionError(f"{what}: {a!r} != {b!r}")


DAEMON = """import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(100)', 'MARK'])
    os._exit(0)
os.wait()
print('started', flush=True)
"""


class SubprocessTests(Tests):
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="execbox-it-subprocess-")
        self.tmp = os.path.join(self.dir, "tmp")
        os.mkdir(self.tmp)
        self.env = dict(os.environ, TMPDIR=self.tmp)
        self.n = 0

    def marker(self):
        self.n += 1
        return f"EBMARK-it-{os.getpid()}-{self.n}"

    def rj(self, *args, **kw):
        kw.setdefault("env", self.env)
        r, p = run_json(SP + list(args), **kw)
        self.nothing_left()
        return r, p

    def nothing_left(self, extra=None):
        markers = [self.tmp.encode()] + ([extra.encode()] if extra else [])
        left = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            for what in ("cmdline", "environ"):
                try:
                    with open(f"/proc/{pid}/{what}", "rb") as f:
                        data = f.read()
                except OSError:
                    continue
                if any(m in data for m in markers):
                    left.append(pid)
                    break
        for pid in left:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        check(not left, f"processes of the run left: {left}")
        dirs = [d for d in os.listdir(self.tmp) if d.startswith("execbox-run-")]
        check(not dirs, f"temp dirs left: {dirs}")

    # ---- results ----

    def test_exit_and_record(self):
        r, p = self.rj("-c", "print('hi')")
        eq(p.returncode, 0, p.stderr)
        eq((r["stdout"], r["stderr"], r["exit_code"], r["timed_out"], r["signal"]),
           ("hi\n", "", 0, False, None))
        eq((r["stdout_bytes"], r["stdout_truncated"], r["error"], r["files"]), (3, False, None, []))
        check(r["cpu_time"] is not None and r["cpu_time"] >= 0, r["cpu_time"])
        check(r["peak_memory_bytes"] and r["peak_memory_bytes"] > 1 << 20, r)
        check(0 < r["execution_time"] < 60)

    def test_signals(self):
        r, p = self.rj("-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
        eq((p.returncode, r["exit_code"], r["signal"]), (137, 137, 9))
        r, p = self.rj("-c", "import ctypes; ctypes.string_at(0)")
        eq((p.returncode, r["exit_code"], r["signal"]), (139, 139, 11))

    def test_traceback(self):
        r, p = self.rj("-c", "import json\njson.loads('{')")
        eq(p.returncode, 1)
        eq(r["error"]["name"], "json.decoder.JSONDecodeError")
        check(r["error"]["value"].startswith("Expecting property name"), r["error"])
        check(r["error"]["traceback"].startswith("Traceback (most recent call last):"), r["error"])
        # A SystemExit message is not an exception: only the exit status is named.
        r, p = self.rj("-c", "import sys; sys.exit('a message')")
        eq((p.returncode, r["error"]),
           (1, {"name": "ExitStatus", "value": "exit status 1", "traceback": ""}))

    def test_timeouts_leave_nothing(self):
        cases = {
            "busy": "print('started', flush=True)\nwhile True: pass",
            "sleep": "import time\nprint('started', flush=True)\ntime.sleep(100)",
            "sigterm": "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                       "print('started', flush=True)\ntime.sleep(100)",
        }
        for name, code in cases.items():
            r, p = self.rj("-t", "1", "-c", code)
            eq((p.returncode, r["exit_code"], r["timed_out"], r["killed_reason"]),
               (124, 124, True, "timeout"), name)
            eq(r["stdout"], "started\n", name)
        m = self.marker()
        r, p = self.rj("-t", "1", "-c", DAEMON.replace("MARK", m) + "time.sleep(100)")
        eq((p.returncode, r["timed_out"], r["stdout"]), (124, True, "started\n"))
        self.nothing_left(m)

    def test_daemon_after_exit(self):
        m = self.marker()
        r, p = self.rj("-c", DAEMON.replace("MARK", m))
        eq((p.returncode, r["timed_out"], r["stdout"]), (0, False, "started\n"), p.stderr)
        self.nothing_left(m)

    def test_output_cap(self):
        code = ("import sys\nc = b'z' * (1 << 20)\n"
                "sys.stdout.buffer.write(b'HEAD'); sys.stderr.buffer.write(b'head')\n"
                "for _ in range(50):\n    sys.stdout.buffer.write(c); sys.stderr.buffer.write(c)\n"
                "sys.stdout.buffer.write(b'TAIL'); sys.stderr.buffer.write(b'tail')\n")
        r, p = self.rj("--output-limit", "1M", "-t", "60", "-c", code)
        eq(p.returncode, 0, p.stderr[-500:])
        total = 50 * (1 << 20) + 8
        eq((r["stdout_bytes"], r["stderr_bytes"]), (total, total))
        eq((r["stdout_truncated"], r["stderr_truncated"]), (True, True))
        check(r["stdout"].startswith("HEADzzz") and r["stdout"].endswith("zzzTAIL"))
        check(r["stderr"].startswith("headzzz") and r["stderr"].endswith("zzztail"))
        check(len(r["stdout"]) < (1 << 20) + 100, len(r["stdout"]))
        check(f"{total - (1 << 20)} bytes omitted" in r["stdout"])

    def test_invalid_utf8(self):
        code = ("import sys\nsys.stdout.buffer.write(b'ok \\xff \\xc0\\x80 \\xed\\xa0\\x80 "
                "\\xe2\\x82 \\x00 \\xe2\\x82\\xac')")
        p = run(["run", "--json"] + SP + ["-c", code], env=self.env)
        raw = p.stdout
        json.loads(raw)  # valid JSON
        raw.encode("utf-8")  # valid UTF-8 (text mode decoded it strictly)
        r = json.loads(raw)
        check(r["stdout"].startswith("ok \ufffd \ufffd\ufffd \ufffd\ufffd\ufffd "), r["stdout"])
        check(r["stdout"].endswith(" \x00 \u20ac"), r["stdout"])
        eq(r["stdout_bytes"], 20)

    def test_stdin(self):
        data = "".join(f"line {i}\n" for i in range(200000))  # ~2 MB, more than a pipe holds
        r, p = self.rj("-i", "-c", "import sys\nd = sys.stdin.read()\nprint(len(d), d[-12:])",
                       input=data)
        eq(r["stdout"], f"{len(data)} {data[-12:]}\n", p.stderr)

    def test_large_program(self):
        lines = ["x = 0"] + ["x += 1  # " + "p" * 60] * 20000 + ["print(x)"]
        prog = os.path.join(self.dir, "big.py")
        with open(prog, "w") as f:
            f.write("\n".join(lines) + "\n")
        check(os.path.getsize(prog) > 1 << 20)
        r, p = self.rj("-t", "60", prog)
        eq((p.returncode, r["stdout"]), (0, "20000\n"), p.stderr)

    def test_sandbox_error(self):
        # The sandbox cannot be made (its temp dir cannot be created): a SandboxError result.
        # (A workspace that is not a directory is refused at start-up now, before any run.)
        missing = os.path.join(self.dir, "no-such-tmp")
        r, p = self.rj("-c", "print(1)", env=dict(self.env, TMPDIR=missing))
        eq(p.returncode, 125)
        eq((r["exit_code"], r["error"]["name"]), (1, "SandboxError"))
        check("no such file" in r["stderr"], r["stderr"])
        bad = os.path.join(self.dir, "not-a-dir")
        open(bad, "w").close()
        p = run(["run"] + SP + ["-w", bad, "-c", "print(1)"], env=self.env)
        eq(p.returncode, 125)
        check("not a directory" in p.stderr and p.stdout == "", p.stderr)

    def test_workspace(self):
        code = ("import os\nos.makedirs('d/e')\nopen('d/e/deep.json', 'w').write('{}')\n"
                "open('plot.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n')\n"
                "os.symlink('/etc/passwd', 'passwd')\nprint(os.getcwd() == os.environ['HOME'])")
        r, p = self.rj("-c", code)
        eq(r["stdout"], "True\n", p.stderr)
        eq([(f["path"], f["mime"]) for f in r["files"]],
           [("d/e/deep.json", "application/json"), ("plot.png", "image/png")])
        ws = os.path.join(self.dir, "ws")
        os.mkdir(ws)
        r, p = self.rj("-w", ws, "-c", "import os\nprint(os.getcwd(), os.environ['HOME'])\n"
                       "open('left.txt', 'w').write('x')")
        eq(r["stdout"], f"{ws} {ws}\n")
        check(os.path.exists(os.path.join(ws, "left.txt")))

    def test_environment(self):
        env = dict(self.env, EXECBOX_IT_SECRET="s3cret")
        r, p = self.rj("-c", "import os\nprint(sorted(os.environ))", env=env)
        names = eval(r["stdout"])  # noqa: S307 - a list literal printed by our own program
        check("EXECBOX_IT_SECRET" not in names, names)
        for n in ("PATH", "HOME", "TMPDIR", "LANG"):
            check(n in names, f"{n} missing: {names}")

    def test_parallel_runs(self):
        def one(i):
            p = run(["run", "--json"] + SP + ["-i", "-c",
                    f"import sys\nprint({i}, sys.stdin.read())\nsys.exit({i % 5})"],
                    input=f"in-{i}", env=self.env)
            return i, p
        with concurrent.futures.ThreadPoolExecutor(10) as pool:
            for i, p in pool.map(one, range(20)):
                r = json.loads(p.stdout)
                eq((p.returncode, r["stdout"]), (i % 5, f"{i} in-{i}\n"), p.stderr)
        self.nothing_left()

    def main(self):
        try:
            super().main()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


if __name__ == "__main__":
    SubprocessTests().main()
