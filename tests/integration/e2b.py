# SPDX-License-Identifier: MIT
"""The e2b backend end to end against the scripted E2B of tests/fakes/fake_e2b.py on loopback
(E2B_API_URL and E2B_SANDBOX_URL point there, as E2B's SDKs allow): what execbox sends, the
result record it makes of the NDJSON stream and of envd's file listing, every error E2B can
answer, and that the sandbox is deleted on every path out. The real E2B service is not reachable
from here and is not tested."""
import base64
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fakes"))
import common  # noqa: E402
from common import SkipTest, Tests, check, eq, run  # noqa: E402,F401
from fake_e2b import FakeE2B  # noqa: E402

KEY = "e2b_0123456789abcdef"


class E2BTests(Tests):
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="e2b-test-")
        self.fake = FakeE2B(KEY, self.tmp)
        self.url = self.fake.start()
        self.env = dict(os.environ, E2B_API_KEY=KEY, E2B_API_URL=self.url,
                        E2B_SANDBOX_URL=self.url)

    def reset(self):
        self.fake.create_429 = 0
        self.fake.create_status = None
        self.fake.execute_mode = None
        self.fake.files_mode = None
        self.fake.requests.clear()

    def e2b(self, *args, env=None, **kw):
        self.reset()
        r, p = common.run_json(["-b", "e2b"] + list(args), env=env or self.env, **kw)
        return r, p

    def mcp_call(self, code, inline="64K"):
        """One execute_python call through `execbox mcp -b e2b --inline-images SIZE` (the surface
        that asks for images inline): the tools/call result."""
        self.reset()
        msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "e2b-test", "version": "1"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": "execute_python", "arguments": {"code": code}}}]
        p = subprocess.run([common.EXECBOX, "mcp", "-b", "e2b", "--inline-images", inline],
                           input="".join(json.dumps(m) + "\n" for m in msgs), env=self.env,
                           capture_output=True, text=True, timeout=60)
        replies = {m.get("id"): m for m in map(json.loads, p.stdout.splitlines())}
        check(2 in replies and "result" in replies[2], (p.stdout[-2000:], p.stderr[-2000:]))
        return replies[2]["result"]

    def rpcs(self, name):
        return [q for q in self.fake.requests
                if q["path"] == "/filesystem.Filesystem/" + name]

    def downloads(self):
        return [q["path"] for q in self.fake.requests if q["path"].startswith("/files?")]

    def creates(self):
        return [q for q in self.fake.requests if q["path"] == "/sandboxes"]

    def assert_deleted(self):
        """Every sandbox this run created was deleted by execbox (not expired)."""
        created = len([q for q in self.fake.requests if q["path"] == "/sandboxes"])
        deletes = [q for q in self.fake.requests if q["method"] == "DELETE"]
        check(created >= 1, "no sandbox was created")
        eq(len(deletes), 1, "DELETE calls")
        eq(self.fake.live(), [], "sandboxes left alive")

    # ---- the contract's cases --------------------------------------------------------------

    def test_result_fields(self):
        r, p = self.e2b("-t", "5", "-c", "print(6*7)")
        eq(p.returncode, 0, p.stderr)
        eq(r["stdout"], "42\n")
        eq(r["stderr"], "")
        eq(r["exit_code"], 0)
        eq(r["backend"], "e2b")
        eq(r["language"], "python")
        eq(r["timed_out"], False)
        eq(r["error"], None)
        check(r["execution_time"] > 0, r)
        eq(r["stdout_bytes"], 3)
        for wall in ("memory", "cpus", "pids", "tmpfs", "workspace_size", "file_size"):
            check(wall in r.get("degraded", []), f"{wall} not in degraded: {r.get('degraded')}")
        # What went over the wire.
        c = self.creates()
        eq(len(c), 1, "creates")
        b = c[0]["body"]
        eq(b["templateID"], "code-interpreter-v1")
        eq(b["timeout"], 5 + 30, "sandbox lifetime = timeout + margin")
        eq(b["allow_internet_access"], False, "network none")
        eq(b["autoPause"], False)
        eq(b["secure"], True)
        eq(c[0]["headers"]["x-api-key"], KEY)
        ex = [q for q in self.fake.requests if q["path"] == "/execute"]
        eq(len(ex), 1, "executes")
        sid = ex[0]["headers"]["e2b-sandbox-id"]
        eq(ex[0]["headers"]["e2b-sandbox-port"], "49999")
        check(ex[0]["headers"].get("x-access-token"), "no X-Access-Token sent")
        eq(ex[0]["body"]["code"], "print(6*7)")
        check("x-api-key" not in ex[0]["headers"], "the API key must not go to the sandbox")
        self.assert_deleted()
        check(sid in self.fake.deleted, "the executed sandbox was not the one deleted")

    def test_network_allow(self):
        r, p = self.e2b("--network", "allow", "--allow-host", "pypi.org",
                        "--allow-host", "*.example.com:8443", "-c", "print(1)")
        eq(r["exit_code"], 0, p.stderr)
        b = self.creates()[0]["body"]
        eq(b["allow_internet_access"], True)
        eq(b["network"], {"allowOut": ["pypi.org", "*.example.com"], "denyOut": ["0.0.0.0/0"]})
        check("allow_ports" in r["degraded"], r["degraded"])
        self.assert_deleted()

    def test_template_flag(self):
        r, p = self.e2b("--e2b-template", "custom-tpl", "-c", "print(1)")
        eq(r["exit_code"], 0, p.stderr)
        eq(self.creates()[0]["body"]["templateID"], "custom-tpl")
        r, p = self.e2b("--e2b-template", "nope", "-c", "print(1)")
        eq(p.returncode, 125, p.stderr)
        eq(r["error"]["name"], "SandboxError")
        check("template 'nope'" in r["stderr"] and "404" in r["stderr"], r["stderr"])
        eq(self.fake.live(), [], "sandboxes left alive")

    def test_traceback(self):
        r, p = self.e2b("-c", "def f():\n    raise ValueError('bad value')\nf()\n")
        eq(r["exit_code"], 1)
        eq(p.returncode, 1)
        eq(r["error"]["name"], "ValueError")
        eq(r["error"]["value"], "bad value")
        check("\x1b" not in r["stderr"] and "\x1b" not in r["error"]["traceback"],
              "ANSI escapes left in the traceback")
        check("ValueError: bad value" in r["stderr"], r["stderr"])
        check("in f" in r["error"]["traceback"], r["error"]["traceback"])
        self.assert_deleted()

    def test_exit_status(self):
        r, _ = self.e2b("-c", "import sys\nprint('a')\nsys.exit(3)")
        eq(r["exit_code"], 3)
        eq(r["error"], {"name": "ExitStatus", "value": "exit status 3", "traceback": ""})
        eq(r["stdout"], "a\n")
        r, _ = self.e2b("-c", "import sys; sys.exit()")
        eq(r["exit_code"], 0)
        r, _ = self.e2b("-c", "import sys; sys.stderr.write('warn\\n')")
        eq(r["stderr"], "warn\n")
        eq(r["exit_code"], 0)

    def test_timeout(self):
        t0 = time.monotonic()
        r, p = self.e2b("-t", "1", "-c", "import time\nprint('start', flush=True)\n"
                        "time.sleep(30)")
        took = time.monotonic() - t0
        eq(p.returncode, 124, p.stderr)
        eq(r["exit_code"], 124)
        eq(r["timed_out"], True)
        eq(r["killed_reason"], "timeout")
        eq(r["error"]["name"], "Timeout")
        eq(r["stdout"], "start\n")
        check(took < 10, f"timeout took {took:.1f}s")
        eq(self.creates()[0]["body"]["timeout"], 31)
        self.assert_deleted()

    def test_output_caps(self):
        r, _ = self.e2b("--output-limit", "1000", "-c",
                        "import sys\nsys.stdout.write('x' * 200000)\nsys.stdout.flush()")
        eq(r["exit_code"], 0)
        eq(r["stdout_truncated"], True)
        eq(r["stdout_bytes"], 200000)
        check(len(r["stdout"]) < 1200, len(r["stdout"]))
        self.assert_deleted()

    def test_output_caps_streamed(self):
        # Streamed to the terminal: the first output_limit bytes of each stream, then one note.
        self.reset()
        p = run(["run", "-b", "e2b", "--output-limit", "1000", "-c",
                 "import sys\nsys.stdout.write('x' * 200000)\nsys.stdout.flush()\n"
                 "sys.stderr.write('y' * 200000)\nsys.stderr.flush()"], env=self.env)
        eq(p.returncode, 0, p.stderr[-500:])
        note = "\n[... execbox: 199000 bytes omitted ...]\n"
        eq(p.stdout, "x" * 1000 + note, "stdout")
        check(p.stderr.endswith("y" * 1000 + note), p.stderr[-1200:])
        check(len(p.stderr) < 1200, len(p.stderr))
        self.assert_deleted()

    def test_flood(self):
        # Past max(64 MiB, 16 x output_limit) the stream is cut and the sandbox deleted.
        r, _ = self.e2b("-t", "60", "--output-limit", "64", "-c",
                        "import sys\nb = 'y' * 65536\nwhile True:\n    sys.stdout.write(b)\n")
        eq(r["killed_reason"], "output_limit", r.get("error"))
        eq(r["exit_code"], 137)
        self.assert_deleted()

    def test_utf8(self):
        r, _ = self.e2b("-c", "print('h\u00e9llo \u2603')")
        eq(r["stdout"], "h\u00e9llo \u2603\n")

    # ---- the files a run left --------------------------------------------------------------

    PNG = "b'\\x89PNG\\r\\n\\x1a\\n' + bytes(range(40))"

    def test_files_listed(self):
        code = ("import os\n"
                "print(os.getcwd())\n"
                "open('out.txt', 'w').write('hello')\n"
                "os.makedirs('sub/d')\n"
                "open('sub/d/data.csv', 'w').write('a,b\\n1,2\\n')\n"
                f"open('plot.png', 'wb').write({self.PNG})\n"
                "open('.hidden', 'w').write('h')\n"
                "os.symlink('out.txt', 'link.txt')\n"
                "os.symlink('/etc', 'etc')\n")
        r, p = self.e2b("-c", code)
        eq(r["exit_code"], 0, p.stderr)
        eq(r["stdout"].strip().endswith("/home/user/workspace"), True, r["stdout"])
        eq(r["files"], [
            {"path": ".hidden", "size": 1, "mime": "application/octet-stream", "origin": "created"},
            {"path": "out.txt", "size": 5, "mime": "text/plain", "origin": "created"},
            {"path": "plot.png", "size": 48, "mime": "image/png", "origin": "created"},
            {"path": "sub/d/data.csv", "size": 8, "mime": "text/csv", "origin": "created"},
        ], "files: the run's own, no symlink, not the template's README.txt or .bashrc")
        check("files_truncated" not in r or r["files_truncated"] is False, r)
        eq(self.downloads(), [], "no image is read unless the caller asks for them inline")
        # What went over the wire: the working directory made as the code interpreter's user,
        # a context working there, the execute in it, the listing, then the delete.
        mk = self.rpcs("MakeDir")
        eq(len(mk), 1, "MakeDir calls")
        eq(mk[0]["body"], {"path": "/home/user/workspace"})
        for q in mk + self.rpcs("ListDir"):
            eq(q["headers"]["e2b-sandbox-port"], "49983")
            eq(q["headers"]["connect-protocol-version"], "1")
            eq(q["headers"]["authorization"], "Basic dXNlcjo=")
            check(q["headers"].get("x-access-token"), "no access token sent to envd")
            check("x-api-key" not in q["headers"], "the API key must not go to the sandbox")
        ctx = [q for q in self.fake.requests if q["path"] == "/contexts"]
        eq(len(ctx), 1, "contexts")
        eq(ctx[0]["body"], {"language": "python", "cwd": "/home/user/workspace"})
        eq(ctx[0]["headers"]["e2b-sandbox-port"], "49999")
        ex = [q for q in self.fake.requests if q["path"] == "/execute"][0]
        check(ex["body"].get("context_id"), ex["body"])
        check("language" not in ex["body"], "context_id and language are exclusive")
        ls = self.rpcs("ListDir")
        eq(len(ls), 1, "ListDir calls")
        eq(ls[0]["body"], {"path": "/home/user/workspace", "depth": 9})
        order = [q["path"] if q["method"] != "DELETE" else "DELETE" for q in self.fake.requests]
        eq(order[-2:], ["/filesystem.Filesystem/ListDir", "DELETE"], "listed before the delete")
        self.assert_deleted()

    def test_files_other_languages(self):
        # The context carries the language (the fake runs every cell as Python).
        for lang, name in (("bash", "bash"), ("javascript", "js")):
            r, p = self.e2b("-l", lang, "-c", "1")
            eq(r["exit_code"], 0, p.stderr)
            eq([q["body"]["language"] for q in self.fake.requests if q["path"] == "/contexts"],
               [name])

    def test_files_caps(self):
        # 300 files: the first 256 by path, and files_truncated; files 8 directories down are
        # listed, 9 down are not (as lib/ws/workspace.c lists a jail's).
        code = ("import os\n"
                "for i in range(300):\n"
                "    open(f'f{i:03d}.txt', 'w').write('x')\n"
                "os.makedirs('a/b/c/d/e/f/g/h/i')\n"
                "open('a/b/c/d/e/f/g/h/in8.txt', 'w').write('8')\n"
                "open('a/b/c/d/e/f/g/h/i/in9.txt', 'w').write('9')\n")
        r, p = self.e2b("-c", code)
        eq(r["exit_code"], 0, p.stderr)
        eq(len(r["files"]), 256)
        eq(r["files_truncated"], True)
        eq(r["files"][0]["path"], "a/b/c/d/e/f/g/h/in8.txt")
        check(all("in9" not in f["path"] for f in r["files"]), "listed 9 directories down")
        eq(r["files"][-1]["path"], "f254.txt")
        self.assert_deleted()

    def test_files_inline_images(self):
        code = ("import os\n"
                f"open('plot.png', 'wb').write({self.PNG})\n"
                f"open('big.png', 'wb').write({self.PNG} + bytes(70000))\n"
                "open('fake.png', 'w').write('not a png')\n"
                "open('notes.txt', 'w').write('n')\n")
        res = self.mcp_call(code)
        eq(res["isError"], False, res)
        images = [c for c in res["content"] if c["type"] == "image"]
        want = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(40))).decode()
        eq(images, [{"type": "image", "data": want, "mimeType": "image/png"}],
           "plot.png inline; big.png over --inline-images; fake.png not a PNG")
        eq([f["path"] for f in res["structuredContent"]["files"]],
           ["big.png", "fake.png", "notes.txt", "plot.png"])
        eq(sorted(self.downloads()),
           ["/files?path=%2Fhome%2Fuser%2Fworkspace%2Ffake.png&username=user",
            "/files?path=%2Fhome%2Fuser%2Fworkspace%2Fplot.png&username=user"],
           "only images within --inline-images are read")
        q = [q for q in self.fake.requests if q["path"].startswith("/files?")][0]
        eq(q["method"], "GET")
        eq(q["headers"]["e2b-sandbox-port"], "49983")
        check(q["headers"].get("x-access-token"), "no access token on the download")
        self.assert_deleted()

    def test_files_download_gone(self):
        # A file gone between the listing and the download (404) stays listed, without data.
        self.fake.files_mode = "download404"
        res = self.run_mcp_kept(f"open('plot.png', 'wb').write({self.PNG})\n")
        eq(res["isError"], False, res)
        eq([c["type"] for c in res["content"]], ["text"])
        eq([f["path"] for f in res["structuredContent"]["files"]], ["plot.png"])
        self.assert_deleted()

    def run_mcp_kept(self, code):
        """mcp_call without resetting the fake's knobs."""
        mode = self.fake.files_mode
        orig = self.reset
        self.reset = lambda: (orig(), setattr(self.fake, "files_mode", mode))
        try:
            return self.mcp_call(code)
        finally:
            self.reset = orig

    def files_failure(self, mode, words, mcp=False):
        code = f"print('ran')\nopen('plot.png', 'wb').write({self.PNG})\n"
        self.reset()
        self.fake.files_mode = mode
        if mcp:
            res = self.run_mcp_kept(code)
            r = res["structuredContent"]
        else:
            r, p = common.run_json(["-b", "e2b", "-c", code], env=self.env)
            eq(p.returncode, 125, f"{mode}: {p.stderr}")
        eq(r["error"]["name"], "SandboxError", mode)
        for w in words:
            check(w in r["stderr"], f"{mode}: {w!r} not in {r['stderr']!r}")
        self.assert_deleted()
        return r

    def test_files_errors(self):
        # Before the code runs: nothing ran.
        for mode, words in (("exists", ["already has /home/user/workspace"]),
                            ("mkdir500", ["making /home/user/workspace", "500", "disk full"]),
                            ("context500", ["code context", "500", "kernel failed"])):
            r = self.files_failure(mode, words)
            check("ran" not in r["stdout"], f"{mode}: the code ran")
            eq([q for q in self.fake.requests if q["path"] == "/execute"], [], mode)
        # After: the output stays, the listing's failure is the run's error.
        for mode, words, mcp in (("list500", ["ListDir", "500", "I/O error"], False),
                                 ("listgarbage", ["not a list of entries"], False),
                                 ("download500", ["GET /files", "500", "I/O error"], True)):
            r = self.files_failure(mode, words, mcp)
            eq(r["stdout"], "ran\n", mode)

    def test_files_listing_too_large(self):
        self.reset()
        self.fake.files_mode = "listflood"
        r, p = common.run_json(["-b", "e2b", "-c", "open('a.txt', 'w').write('a')"],
                               env=self.env)
        eq(r["exit_code"], 0, p.stderr)
        eq(r["files"], [])
        eq(r["files_truncated"], True)
        self.assert_deleted()

    def test_files_bad_entries(self):
        # Entries outside the directory, with '.', '..' or empty segments, a NUL, of another
        # type or with a size that is no uint64 are not listed; numbers are read as numbers.
        self.reset()
        self.fake.files_mode = "badentries"
        r, p = common.run_json(["-b", "e2b", "-c", "open('ok.txt', 'w').write('ok')"],
                               env=self.env)
        eq(r["exit_code"], 0, p.stderr)
        eq(r["files"], [{"path": "num.txt", "size": 7, "mime": "text/plain", "origin": "created"},
                        {"path": "ok.txt", "size": 2, "mime": "text/plain", "origin": "created"}])
        self.assert_deleted()

    # ---- errors E2B can answer ------------------------------------------------------------

    def test_rate_limited(self):
        self.reset()
        self.fake.create_429 = 2
        r, p = common.run_json(["-b", "e2b", "-c", "print(5)"], env=self.env)
        eq(r["stdout"], "5\n", p.stderr)
        eq(len(self.creates()), 3, "two 429s then a create")
        self.fake.requests.clear()
        self.fake.create_429 = 10
        r, p = common.run_json(["-b", "e2b", "-c", "print(5)"], env=self.env)
        eq(p.returncode, 125)
        eq(r["error"]["name"], "SandboxError")
        check("429" in r["stderr"] and "rate limited" in r["stderr"], r["stderr"])
        eq(len(self.creates()), 3, "tries")
        eq(self.fake.live(), [])

    def test_bad_key(self):
        env = dict(self.env, E2B_API_KEY="e2b_ffff")
        r, p = self.e2b("-c", "print(1)", env=env)
        eq(p.returncode, 125)
        check("401" in r["stderr"] and "E2B_API_KEY" in r["stderr"], r["stderr"])
        env = dict(self.env)
        del env["E2B_API_KEY"]
        p = run(["run", "-b", "e2b", "-c", "print(1)"], env=env)
        eq(p.returncode, 125)
        check("E2B_API_KEY is not set" in p.stderr, p.stderr)

    def test_server_error(self):
        self.reset()
        self.fake.create_status = (500, "internal error: no capacity")
        r, p = common.run_json(["-b", "e2b", "-c", "print(1)"], env=self.env)
        eq(p.returncode, 125)
        check("500" in r["stderr"] and "no capacity" in r["stderr"], r["stderr"])

    def stream_failure(self, mode, words, code="print('a', flush=True)\nprint('b')"):
        self.reset()
        self.fake.execute_mode = mode
        r, p = common.run_json(["-b", "e2b", "-c", code], env=self.env)
        eq(p.returncode, 125, f"{mode}: {p.stderr}")
        eq(r["error"]["name"], "SandboxError")
        for w in words:
            check(w in r["stderr"], f"{mode}: {w!r} not in {r['stderr']!r}")
        self.assert_deleted()

    def test_sandbox_not_found(self):
        self.stream_failure("gone", ["502", "The sandbox was not found", "gone"])

    def test_execute_500(self):
        self.stream_failure("http500", ["500", "kernel not ready"])

    def test_stream_drop(self):
        self.stream_failure("drop", ["broke off"],
                            code="import time\nprint('a', flush=True)\ntime.sleep(1)\nprint('b')")

    def test_unexpected_end(self):
        self.stream_failure("unexpected", ["ended unexpectedly"])

    def test_garbage(self):
        self.stream_failure("garbage", ["not a typed JSON object"])

    # ---- what the backend refuses and where it talks ----------------------------------------

    def test_refusals(self):
        self.reset()
        p = run(["run", "-b", "e2b", "--stdin", "-c", "print(input())"], input="x\n", env=self.env)
        eq(p.returncode, 125)
        check("stdin" in p.stderr, p.stderr)
        p = run(["run", "-b", "e2b", "-w", self.tmp, "-c", "print(1)"], env=self.env)
        eq(p.returncode, 125)
        check("--workspace" in p.stderr, p.stderr)
        eq(self.creates(), [], "a refused run must not create a sandbox")

    def test_plain_http_only_to_loopback(self):
        env = dict(self.env, E2B_API_URL="http://api.e2b.example")
        p = run(["check", "-b", "e2b"], env=env)
        eq(p.returncode, 1)
        check("MISS configuration" in p.stdout and "in clear" in p.stdout, p.stdout)
        p = run(["run", "-b", "e2b", "-c", "print(1)"], env=env)
        eq(p.returncode, 125)

    def test_check(self):
        p = run(["check", "-b", "e2b"], env=self.env)
        eq(p.returncode, 0, p.stdout)
        for w in ("ok   network none", "MISS memory", "MISS pids", "not enforced by this backend",
                  "status: ready", self.url):
            check(w in p.stdout, f"{w!r} not in {p.stdout}")

    def test_interrupted_run_deletes(self):
        """SIGTERM to execbox mid-run cancels the stream and still deletes the sandbox."""
        self.reset()
        proc = subprocess.Popen([common.EXECBOX, "run", "--json", "-b", "e2b", "-t", "30", "-c",
                                 "import time\ntime.sleep(30)"], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while not any(q["path"] == "/execute" for q in self.fake.requests):
            check(time.monotonic() < deadline, "no execute arrived")
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
        self.assert_deleted()
        check(b"Cancelled" in out or proc.returncode != 0, (out, err))

    def test_crash_leaves_a_bounded_sandbox(self):
        """SIGKILL leaves no chance to delete: the sandbox was created with a lifetime of the
        timeout + 30 s and no auto-pause, so E2B ends it by itself (the fake enforces it)."""
        self.reset()
        proc = subprocess.Popen([common.EXECBOX, "run", "-b", "e2b", "-t", "1", "-c",
                                 "import time\ntime.sleep(60)"], env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not any(q["path"] == "/execute" for q in self.fake.requests):
            check(time.monotonic() < deadline, "no execute arrived")
            time.sleep(0.05)
        proc.kill()
        proc.wait()
        body = self.creates()[0]["body"]
        eq(body["autoPause"], False)
        eq(body["timeout"], math.ceil(1) + 30)
        eq(len(self.fake.live()), 1, "the orphan lives until its lifetime ends")
        for sid in self.fake.live():  # do not wait 31 s here: end it as E2B would
            self.fake.sandboxes[sid].deadline = 0
        deadline = time.monotonic() + 5
        while self.fake.live() and time.monotonic() < deadline:
            time.sleep(0.1)
        eq(self.fake.live(), [], "expired")

    def main(self):
        try:
            super().main()
        finally:
            self.fake.close()
            import shutil
            shutil.rmtree(self.tmp, ignore_errors=True)


if __name__ == "__main__":
    E2BTests().main()
