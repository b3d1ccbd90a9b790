# SPDX-License-Identifier: MIT
"""Integration: every flag of `execbox run` and its errors, `schema`, `check`, --help and
--version, driving the built CLI with the subprocess backend (passed explicitly)."""
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import EXECBOX, Tests, run, run_json  # noqa: E402

SP = ["-b", "subprocess"]
WARNING = "isolates nothing"


def check(cond, msg=""):
    if not cond:
        raise AssertionError(msg)


def eq(a, b, what=""):
    if a != b:
        raise AssertionError(f"{what}: {a!r} != {b!r}")


class CliTests(Tests):
    CHECK_TEMP_LEFTOVERS = True

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="execbox-it-cli-")
        # A private TMPDIR: its path marks every process of our runs in /proc.
        self.tmp = os.path.join(self.dir, "tmp")
        os.mkdir(self.tmp)
        self.env = dict(os.environ, TMPDIR=self.tmp)

    def path(self, name, content=None):
        p = os.path.join(self.dir, name)
        if content is not None:
            with open(p, "w") as f:
                f.write(content)
        return p

    def run(self, *args, **kw):
        kw.setdefault("env", self.env)
        return run(["run"] + SP + list(args), **kw)

    def run_json(self, *args, **kw):
        kw.setdefault("env", self.env)
        return run_json(SP + list(args), **kw)

    def bad(self, args, named, input=None):
        """execbox run ARGS must fail with 125 and name `named` on stderr, running nothing."""
        p = self.run(*args, input=input)
        eq(p.returncode, 125, f"exit status of {args} (stderr {p.stderr!r})")
        check(named in p.stderr, f"{args}: stderr {p.stderr!r} does not name {named!r}")
        eq(p.stdout, "", f"stdout of {args}")

    # ---- where the code comes from ----

    def test_code_flag(self):
        p = self.run("-c", "print(6*7)")
        eq(p.returncode, 0, p.stderr)
        eq(p.stdout, "42\n")
        p = self.run("--code", "print('long')")
        eq(p.stdout, "long\n")

    def test_file(self):
        f = self.path("prog.py", "import sys\nprint('from file', sys.argv[0].endswith('.py'))\n")
        p = self.run(f)
        eq(p.returncode, 0, p.stderr)
        eq(p.stdout, "from file True\n")

    def test_program_from_stdin(self):
        p = self.run("-", input="print('from stdin')\n")
        eq(p.returncode, 0, p.stderr)
        eq(p.stdout, "from stdin\n")

    def test_empty_program(self):
        p = self.run("-c", "")
        eq(p.returncode, 0, p.stderr)
        eq(p.stdout, "")

    def test_language_flag(self):
        p = self.run("-l", "bash", "-c", "echo \"bash $((6*7))\"")
        eq((p.returncode, p.stdout), (0, "bash 42\n"), p.stderr)
        p = self.run("--language", "python", "-c", "print('py')")
        eq(p.stdout, "py\n")
        if os.access("/usr/bin/node", os.X_OK):
            p = self.run("-l", "javascript", "-c", "console.log('js', 6*7)")
            eq((p.returncode, p.stdout), (0, "js 42\n"), p.stderr)
        self.bad(["-l", "cobol", "-c", "x"], "cobol")
        # The library's aliases are accepted as well.
        eq(self.run("-l", "py", "-c", "print('alias')").stdout, "alias\n")
        eq(self.run("-l", "sh", "-c", "echo sh-alias").stdout, "sh-alias\n")

    def test_language_from_extension(self):
        f = self.path("prog.sh", "echo \"shell ${BASH_VERSION:+yes}\"\n")
        eq(self.run(f).stdout, "shell yes\n")
        f = self.path("prog.bash", "echo bash-ext\n")
        eq(self.run(f).stdout, "bash-ext\n")
        if os.access("/usr/bin/node", os.X_OK):
            f = self.path("prog.js", "console.log(typeof process)\n")
            eq(self.run(f).stdout, "object\n")
        # -l wins over the extension.
        f = self.path("really_bash.py", "echo overridden\n")
        eq(self.run("-l", "bash", f).stdout, "overridden\n")

    def test_stdin_flag(self):
        code = "import sys\nprint(repr(sys.stdin.read()))"
        p = self.run("-i", "-c", code, input="line one\nline two\n")
        eq(p.stdout, "'line one\\nline two\\n'\n", p.stderr)
        p = self.run("--stdin", "-c", code, input="x")
        eq(p.stdout, "'x'\n")
        # Without -i the program's stdin is /dev/null, whatever ours holds.
        p = self.run("-c", code, input="not for the program")
        eq(p.stdout, "''\n")

    def test_code_errors(self):
        f = self.path("both.py", "print(1)\n")
        self.bad(["-c", "print(1)", f], "not both")
        self.bad([], "no code")
        self.bad(["-c", "1", "extra"], "not both")
        self.bad([f, "extra"], "extra")
        self.bad(["-i", "-"], "stdin", input="print(1)\n")
        self.bad([self.path("missing.py")], "missing.py")
        self.bad([self.dir], "is a directory")
        big = self.path("big.py", "#" * (17 << 20))  # over EXECBOX_CODE_MAX (16 MiB)
        self.bad([big], "too large")
        os.unlink(big)
        self.bad(["-i", "-c", "print(1)"], "stdin", input="x" * (17 << 20))
        self.bad(["--no-such-flag", "-c", "1"], "--help")
        p = self.run("-c")
        eq(p.returncode, 125, p.stderr)

    # ---- output ----

    def test_json(self):
        r, p = self.run_json("-c", "import sys\nprint('out')\nprint('err', file=sys.stderr)")
        eq(p.returncode, 0, p.stderr)
        eq(r["stdout"], "out\n")
        eq(r["stderr"], "err\n")
        eq(r["exit_code"], 0)
        eq(r["backend"], "subprocess")
        eq(r["language"], "python")
        check(isinstance(r["execution_time"], float))
        for k in ("timed_out", "oom_killed", "signal", "killed_reason", "stdout_truncated",
                  "stderr_truncated", "stdout_bytes", "stderr_bytes", "cpu_time",
                  "peak_memory_bytes", "error", "files"):
            check(k in r, f"{k} missing")
        # The program's output is in the record, not passed through; one line of JSON.
        eq(p.stdout.count("\n"), 1)
        check("err\n" not in p.stderr.replace(WARNING, ""), p.stderr)

    def test_pretty(self):
        p = self.run("--pretty", "-c", "print(1)")
        eq(p.returncode, 0, p.stderr)
        check(p.stdout.startswith("{\n  \""), p.stdout[:40])
        eq(json.loads(p.stdout)["stdout"], "1\n")
        p = self.run("--json", "--pretty", "-c", "print(1)")
        eq(json.loads(p.stdout)["stdout"], "1\n")

    def test_json_exit_status(self):
        r, p = self.run_json("-c", "import sys; sys.exit(9)")
        eq(p.returncode, 9)
        eq(r["exit_code"], 9)
        r, p = self.run_json("-c", "raise KeyError('k')")
        eq(p.returncode, 1)
        eq(r["error"]["name"], "KeyError")

    def test_exit_status_passthrough(self):
        for code in (0, 1, 3, 42, 255):
            p = self.run("-c", f"import sys; sys.exit({code})")
            eq(p.returncode, code, p.stderr)
        p = self.run("-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
        eq(p.returncode, 137)
        p = self.run("-l", "bash", "-c", "exit 77")
        eq(p.returncode, 77)

    def test_timeout(self):
        p = self.run("-t", "1", "-c", "import time\nprint('partial', flush=True)\n"
                     "time.sleep(30)")
        eq(p.returncode, 124, p.stderr)
        eq(p.stdout, "partial\n")
        check("timed out after 1 second;" in p.stderr, p.stderr)
        r, p = self.run_json("--timeout", "0.5", "-c", "while True: pass")
        eq(p.returncode, 124)
        eq((r["exit_code"], r["timed_out"], r["killed_reason"]), (124, True, "timeout"))
        eq(r["error"]["name"], "Timeout")
        eq(r["error"]["value"], "execution exceeded the time limit of 0.5 seconds and was killed")
        r, p = self.run_json("--timeout", "1", "-c", "while True: pass")
        eq(p.returncode, 124)
        eq(r["error"]["value"], "execution exceeded the time limit of 1 second and was killed")
        self.nothing_left()

    def test_streaming(self):
        # Output reaches us while the program still runs: read the first line with a deadline
        # far below the program's sleep, then interrupt execbox, which must still tear the
        # sandbox down and remove its temp files, and exit as killed by that signal.
        for stream, sig in (("stdout", signal.SIGTERM), ("stderr", signal.SIGINT)):
            proc = subprocess.Popen(
                [EXECBOX, "run"] + SP + ["-t", "60", "-c",
                                         f"import sys, time\nprint('first', file=sys.{stream}, "
                                         "flush=True)\ntime.sleep(30)\nprint('never')"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
            try:
                pipe = proc.stdout if stream == "stdout" else proc.stderr
                got = b""
                deadline = time.monotonic() + 10
                while b"first\n" not in got and time.monotonic() < deadline:
                    ready, _, _ = select.select([pipe], [], [], deadline - time.monotonic())
                    if not ready:
                        break
                    chunk = os.read(pipe.fileno(), 4096)
                    if not chunk:
                        break
                    got += chunk
                check(b"first\n" in got, f"{stream}: nothing streamed before the deadline: {got!r}")
                check(proc.poll() is None, "the program ended early")
                proc.send_signal(sig)
                out, err = proc.communicate(timeout=30)
                eq(proc.returncode, 128 + sig, f"exit status after {sig!r}: {err!r}")
                check(b"never" not in out, out)
                check(b"interrupted" in err, err)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
            self.nothing_left()

    def test_stalled_reader(self):
        # A reader that never reads our output must not keep the run alive past its deadline:
        # the program is still killed on time and execbox exits 124.
        for stream in ("stdout", "stderr"):
            proc = subprocess.Popen(
                [EXECBOX, "run"] + SP + ["-t", "1", "-c",
                                         f"import sys\nwhile True: sys.{stream}.write('x' * 65536)"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
            try:
                rc = proc.wait(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                proc.stdout.close()
                proc.stderr.close()
            eq(rc, 124, f"{stream} never read")
            self.nothing_left()

    def test_warning_once(self):
        for args in (["-c", "print(1)"], ["--json", "-c", "print(1)"],
                     ["-c", "import sys; sys.exit(3)"]):
            p = self.run(*args)
            eq(p.stderr.count(WARNING), 1, f"{args}: {p.stderr!r}")
            eq(p.stdout.count(WARNING), 0, f"{args}: {p.stdout!r}")

    # ---- backend and policy flags ----

    def test_backend_flag(self):
        p = run(["run", "-b", "nope", "-c", "print(1)"], env=self.env)
        eq(p.returncode, 125)
        check("nope" in p.stderr, p.stderr)
        eq(p.stdout, "")
        p = run(["run", "--backend", "subprocess", "-c", "print(2)"], env=self.env)
        eq(p.stdout, "2\n")

    def test_memory(self):
        code = "x = bytearray(300 << 20)\nprint('allocated')"
        p = self.run("-m", "64M", "-c", code)
        eq(p.returncode, 1, p.stderr)
        check("MemoryError" in p.stderr, p.stderr)
        p = self.run("--memory", "1G", "-c", code)
        eq((p.returncode, p.stdout), (0, "allocated\n"), p.stderr)

    def test_cpus(self):
        p = self.run("--cpus", "2.5", "-c", "import os; print(os.environ['OMP_NUM_THREADS'])")
        eq(p.stdout, "3\n", p.stderr)

    def test_output_limit(self):
        r, p = self.run_json("--output-limit", "100", "-c", "print('a' * 10000)")
        eq(p.returncode, 0, p.stderr)
        eq(r["stdout_bytes"], 10001)
        check(r["stdout_truncated"])
        check(r["stdout"].startswith("a" * 50) and r["stdout"].endswith("a" * 49 + "\n"),
              r["stdout"])
        check("bytes omitted" in r["stdout"])

    def test_output_limit_streamed(self):
        """A flood streamed to the terminal stops at --output-limit per stream, then one note
        naming the bytes held back; the run still ends at its timeout."""
        code = ("import sys\nwhile True:\n    print('x' * 100)\n"
                "    print('y' * 100, file=sys.stderr)\n")
        note = re.compile(r"\n\[\.\.\. execbox: ([0-9]+) bytes omitted \.\.\.\]\n")
        for backend in ("subprocess", "jail"):
            p = run(["run", "-b", backend, "-t", "2", "--output-limit", "1k", "-c", code],
                    env=self.env)
            err = p.stderr
            if backend == "subprocess":  # its warning comes first, from the CLI
                check(err.startswith("execbox: warning:"), err[:200])
                err = err[err.index("\n") + 1:]
            for name, text, ch in (("stdout", p.stdout, "x"), ("stderr", err, "y")):
                m = note.search(text)
                check(m, f"{backend} {name}: no note in {text[-300:]!r}")
                check(int(m.group(1)) > 0, m.group(0))
                eq(m.start(), 1024, f"{backend} {name}: bytes streamed before the note")
                eq(text[:1024], ((ch * 100 + "\n") * 11)[:1024], f"{backend} {name} head")
                rest = text[m.end():]
                if name == "stdout":
                    eq(rest, "", f"{backend}: stdout after the note")
                else:
                    check(rest.startswith("execbox: timed out after 2 seconds"), rest)

    def test_file_size(self):
        p = self.run("--file-size", "1k", "-c", "open('f', 'w').write('x' * 10000)")
        eq(p.returncode, 1)
        check("File too large" in p.stderr, p.stderr)
        p = self.run("--file-size", "1M", "-c", "open('f', 'w').write('x' * 10000)")
        eq(p.returncode, 0, p.stderr)

    def test_workspace(self):
        ws = os.path.join(self.dir, "ws")
        os.mkdir(ws)
        with open(os.path.join(ws, "in.txt"), "w") as f:
            f.write("given")
        r, p = self.run_json("-w", ws, "-c", "import os\nprint(os.getcwd())\n"
                             "print(open('in.txt').read())\nopen('out.csv', 'w').write('a,b')")
        eq(p.returncode, 0, p.stderr)
        eq(r["stdout"], f"{ws}\ngiven\n")
        eq([(f["path"], f["size"], f["mime"]) for f in r["files"]],
           [("in.txt", 5, "text/plain"), ("out.csv", 3, "text/csv")])
        check(os.path.exists(os.path.join(ws, "out.csv")), "the caller's workspace was removed")
        r, p = self.run_json("--workspace", ws, "-c", "import os; print(sorted(os.listdir()))")
        eq(r["stdout"], "['in.txt', 'out.csv']\n")
        # A workspace that is not a directory: the sandbox cannot start -> 125, reason given.
        p = self.run("-w", self.path("afile", "x"), "-c", "print(1)")
        eq(p.returncode, 125)
        check("not a directory" in p.stderr, p.stderr)

    def test_workspace_checked_at_start(self):
        """run, serve and mcp refuse an unfit --workspace before they start: exit 125 with the
        reason, never a server that reports healthy and fails each request."""
        bad = [(os.path.join(self.dir, "no-such-dir"), "no such file"),
               (self.path("plain-file", "x"), "not a directory"),
               ("/", "system directory"), ("/etc", "system directory"),
               ("/usr/lib", "system"), ("/tmp", "system directory")]
        for ws, words in bad:
            for cmd in (["run"] + SP + ["-w", ws, "-c", "print(1)"],
                        ["serve"] + SP + ["-w", ws, "--listen", "127.0.0.1:0"],
                        ["mcp"] + SP + ["-w", ws]):
                try:
                    p = subprocess.run([EXECBOX] + cmd, env=self.env, stdin=subprocess.DEVNULL,
                                       capture_output=True, text=True, timeout=20)
                except subprocess.TimeoutExpired:
                    raise AssertionError(f"{cmd}: started with an unfit workspace")
                eq(p.returncode, 125, f"{cmd}: exit status (stderr {p.stderr!r})")
                check("workspace" in p.stderr and words in p.stderr, f"{cmd}: {p.stderr!r}")
                check("listening" not in p.stderr, f"{cmd}: {p.stderr!r}")
                eq(p.stdout, "", f"stdout of {cmd}")

    def test_readme_workspace_example(self):
        """The README tour's --workspace line works as written, from an empty directory."""
        src = os.environ.get("EXECBOX_SOURCE", os.path.join(os.path.dirname(__file__), "../.."))
        with open(os.path.join(src, "README.md"), encoding="utf-8") as f:
            lines = [ln for ln in f if ln.startswith(("execbox run -w", "mkdir")) and " -w " in ln]
        eq(len(lines), 1, "the README's --workspace example")
        cwd = tempfile.mkdtemp(dir=self.dir)
        # `execbox run` on the subprocess backend, as every test of this file.
        shell = 'execbox() { "$EXECBOX" "$1" -b subprocess "${@:2}"; }\n' + lines[0]
        p = subprocess.run(["bash", "-ec", shell], cwd=cwd, capture_output=True, text=True,
                           env=dict(self.env, EXECBOX=EXECBOX), timeout=60)
        eq(p.returncode, 0, p.stderr)
        with open(os.path.join(cwd, "out", "r.txt")) as f:
            eq(f.read(), "hi")

    def test_docs_policy_and_result(self):
        """docs/policy.md's example file is a valid policy naming every field of its table,
        and docs/result.md documents every field a result record has."""
        import re
        src = os.environ.get("EXECBOX_SOURCE", os.path.join(os.path.dirname(__file__), "../.."))
        with open(os.path.join(src, "docs", "policy.md"), encoding="utf-8") as f:
            doc = f.read()
        example = json.loads(re.search(r"```json\n(.*?)```", doc, re.S).group(1))
        table = re.findall(r"^\| `(\w+)` \|", doc, re.M)
        eq(sorted(table), sorted(example), "the fields of the table and of the example")
        ws = os.path.join(self.dir, "doc-ws")
        os.makedirs(ws, exist_ok=True)
        example["workspace"] = ws
        pol = self.path("doc-policy.json", json.dumps(example))
        p = run(["schema", "--policy", pol], env=self.env)
        eq(p.returncode, 0, f"the example policy: {p.stderr}")
        with open(os.path.join(src, "docs", "result.md"), encoding="utf-8") as f:
            doc = f.read()
        documented = set(re.findall(r"`(\w+)`", doc))
        code = "import os\nopen('f.txt', 'w').write('x')\nraise SystemExit(3)"
        r, p = self.run_json("-c", code)
        missing = [k for k in r if k not in documented]
        eq(missing, [], "result fields missing from docs/result.md")
        for k in r["files"][0]:
            check(k in documented, f"files[].{k} is not documented")

    def test_accepted_policy_flags(self):
        # Walls the subprocess backend does not build are still parsed and accepted.
        for args in (["--pids", "10"], ["--network", "none"], ["--tmpfs", "16M"],
                     ["--workspace-size", "32M"], ["--rootfs", "/"], ["--timeout", "3"],
                     ["--output-limit", "1M"], ["--file-size", "64k"]):
            p = self.run(*args, "-c", "print('ok')")
            eq((p.returncode, p.stdout), (0, "ok\n"), f"{args}: {p.stderr}")

    def test_bad_policy_values(self):
        for flag, value in (("-t", "abc"), ("--timeout", "-1"), ("--timeout", "0"),
                            ("-m", "10X"), ("--memory", "1.5"), ("--memory", "1k"),
                            ("--cpus", "0"), ("--cpus", "x"), ("--pids", "1.5"),
                            ("--pids", "0"), ("--network", "host"), ("--output-limit", "1"),
                            ("--output-limit", "5G"), ("--tmpfs", "x"), ("--file-size", "-1"),
                            ("--workspace-size", "abc"), ("--workspace", "no/such/dir")):
            long = {"-t": "--timeout", "-m": "--memory"}.get(flag, flag)
            self.bad([flag, value, "-c", "print(1)"], long)
            check(value in self.run(flag, value, "-c", "1").stderr or value == "",
                  f"{flag} {value}: value not quoted")

    def test_policy_file(self):
        pol = self.path("policy.json", json.dumps({"timeout": 1, "output_limit": 100}))
        sleeper = "import time\nprint('x' * 1000, flush=True)\ntime.sleep(1.5)\nprint('done')"
        r, p = self.run_json("--policy", pol, "-c", sleeper)
        eq(p.returncode, 124)
        check(r["stdout_truncated"])
        # Flags override the file, wherever they stand on the command line.
        for args in (["--policy", pol, "-t", "10"], ["-t", "10", "--policy", pol]):
            r, p = self.run_json(*args, "-c", sleeper)
            eq(p.returncode, 0, f"{args}: {p.stderr}")
            check(r["stdout"].endswith("done\n"), r["stdout"])
            check(r["stdout_truncated"], "the file's output_limit was lost")
        self.bad(["--policy", self.path("missing.json"), "-c", "1"], "missing.json")
        self.bad(["--policy", self.path("bad.json", "{\"timeout\": "), "-c", "1"], "bad.json")
        self.bad(["--policy", self.path("unknown.json", "{\"colour\": 1}"), "-c", "1"], "colour")
        self.bad(["--policy", self.path("badval.json", "{\"memory\": \"lots\"}"), "-c", "1"],
                 "memory")

    # ---- the other subcommands ----

    def test_help(self):
        for cmd in ("run", "check", "schema"):
            p = run([cmd, "--help"])
            eq(p.returncode, 0, f"{cmd} --help: {p.stderr}")
            check(p.stdout.startswith(f"Usage: execbox {cmd}"), p.stdout[:80])
            p = run([cmd, "-h"])
            eq(p.returncode, 0)
        p = run(["run", "--help"])
        for flag in ("--code", "--language", "--stdin", "--json", "--pretty", "--backend",
                     "--timeout", "--memory", "--cpus", "--pids", "--network", "--workspace",
                     "--output-limit", "--tmpfs", "--file-size", "--workspace-size", "--rootfs",
                     "--policy", "124", "125"):
            check(flag in p.stdout, f"run --help lacks {flag}")
        for args in (["--help"], ["-h"], ["help"]):
            p = run(args)
            eq(p.returncode, 0)
            for cmd in ("run", "check", "schema"):
                check(f"  {cmd} " in p.stdout, f"{args} lacks {cmd}")
        p = run([])
        check(p.returncode != 0 and "Usage" in p.stderr, p.stderr)
        p = run(["frobnicate"])
        check(p.returncode != 0 and "frobnicate" in p.stderr, p.stderr)

    def test_version(self):
        p = run(["--version"])
        eq(p.returncode, 0)
        eq(p.stdout, "execbox 0.1.0\n")

    def schema(self, *args):
        p = run(["schema"] + list(args))
        eq(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def check_tool(self, name, desc, params):
        eq(name, "execute_python")
        for word in ("no network", "/workspace", "numpy", "pandas", "matplotlib", "stdout",
                     "stderr", "exit_code", "execution_time"):
            check(word in desc, f"description lacks {word!r}")
        eq(params["type"], "object")
        eq(params["required"], ["code"])
        eq(params["properties"]["code"]["type"], "string")
        eq(params["properties"]["timeout"]["type"], "integer")

    def test_schema(self):
        for args in ([], ["--format", "mcp"], ["-f", "mcp"]):
            t = self.schema(*args)
            self.check_tool(t["name"], t["description"], t["inputSchema"])
            check("outputSchema" in t and "exit_code" in t["outputSchema"]["properties"])
        t = self.schema("--format", "anthropic")
        self.check_tool(t["name"], t["description"], t["input_schema"])
        check("inputSchema" not in t)
        t = self.schema("--format", "openai")
        eq(t["type"], "function")
        self.check_tool(t["function"]["name"], t["function"]["description"],
                        t["function"]["parameters"])
        t = self.schema("--format", "anthropic", "-t", "30")
        eq(t["input_schema"]["properties"]["timeout"]["maximum"], 30)
        t = self.schema("--languages", "python,bash", "--name", "run_code")
        eq(t["name"], "run_code")
        eq(t["inputSchema"]["properties"]["language"]["enum"], ["python", "bash"])
        p = run(["schema", "--format", "gemini"])
        check(p.returncode != 0 and "gemini" in p.stderr, p.stderr)
        p = run(["schema", "--languages", "cobol"])
        check(p.returncode != 0 and "cobol" in p.stderr, p.stderr)

    def test_check(self):
        p = run(["check", "-b", "subprocess"])
        eq(p.returncode, 0, p.stderr)
        check(p.stdout.startswith("backend subprocess\n"), p.stdout)
        for word in ("process group", "rlimits", "filesystem", "network", "tier:",
                     "status: ready"):
            check(word in p.stdout, f"check lacks {word!r}: {p.stdout}")
        check("MISS filesystem" in p.stdout, "subprocess must admit it has no filesystem wall")
        p = run(["check", "--all"])
        check("backend subprocess" in p.stdout, p.stdout)
        # Every backend it lists says a tier (one that cannot run here says so), and it lists
        # only backends -b takes: firecracker (designed, not built) is named apart.
        blocks = [b for b in p.stdout.split("\n\n") if b.startswith("backend ")]
        for b in blocks:
            tier = re.search(r"^  tier: (.*)$", b, re.M)
            check(tier and tier.group(1).strip(), f"no tier in: {b}")
        check(not any(b.startswith("backend firecracker") for b in blocks), p.stdout)
        check("firecracker: designed, not built" in p.stdout, p.stdout)
        p = run(["run", "-b", "firecracker", "-c", "1"])
        check(p.returncode != 0 and "designed, not built" in p.stderr, p.stderr)
        p = run(["check", "-b", "firecracker"])
        check(p.returncode == 1 and "MISS backend" in p.stdout, p.stdout)
        p = run(["check", "-b", "nope"])
        check(p.returncode != 0 and "nope" in p.stderr, p.stderr)

    # ---- helpers ----

    def nothing_left(self, wait=0):
        """No process whose argv or environment mentions our private TMPDIR."""
        deadline = time.monotonic() + wait
        marker = self.tmp.encode()
        while True:
            left = []
            for pid in os.listdir("/proc"):
                if not pid.isdigit() or int(pid) == os.getpid():
                    continue
                for what in ("cmdline", "environ"):
                    try:
                        with open(f"/proc/{pid}/{what}", "rb") as f:
                            if marker in f.read():
                                left.append(pid)
                                break
                    except OSError:
                        pass
            if not left or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        for pid in left:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        check(not left, f"processes left: {left}")
        leftover_dirs = [d for d in os.listdir(self.tmp) if d.startswith("execbox-run-")]
        check(not leftover_dirs, f"temp dirs left: {leftover_dirs}")

    def main(self):
        try:
            super().main()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


if __name__ == "__main__":
    CliTests().main()
