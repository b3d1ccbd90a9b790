# SPDX-License-Identifier: MIT
"""The `remote` backend end to end: real `execbox serve` instances on loopback (the jail when
this machine has its walls, else the subprocess backend), and a misbehaving fake one
(tests/fakes/fake_execbox.py)."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import EXECBOX, SOURCE, Tests, run, run_json  # noqa: E402
from serve import Server, descendants, wait_for  # noqa: E402

TOKEN = "remote-test-token"
FAKE = os.path.join(SOURCE, "tests", "fakes", "fake_execbox.py")
# The backend the instances run: the default one where it is usable, so that the remote hop
# is proven against the real sandbox.
BACKEND = os.environ.get("EXECBOX_TEST_BACKEND") or (
    "jail" if run(["check"]).returncode == 0 else "subprocess")
# Fields that differ between any two runs of the same program.
VOLATILE = ("execution_time", "cpu_time", "peak_memory_bytes", "backend")
MARGIN = 10  # the backend's deadline margin (remote.c RM_MARGIN_S)


def serve(*args, **kw):
    return Server("--backend", BACKEND, "--token", TOKEN, *args, **kw)


def url(s):
    return f"http://{s.host}:{s.port}"


def remote_args(*servers):
    return ["--backend", "remote", "--remote", ",".join(servers), "--remote-token", TOKEN]


def same(a, b):
    return {k: v for k, v in a.items() if k not in VOLATILE} == \
        {k: v for k, v in b.items() if k not in VOLATILE}


class Fake:
    def __init__(self, mode):
        self.log = f"/tmp/fake-execbox-{os.getpid()}-{mode}.jsonl"
        if os.path.exists(self.log):
            os.unlink(self.log)
        self.proc = subprocess.Popen([sys.executable, FAKE, mode, "--log", self.log],
                                     stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())
        self.url = f"http://127.0.0.1:{self.port}"

    def executes(self):
        if not os.path.exists(self.log):
            return 0
        with open(self.log, encoding="utf-8") as f:
            return sum(1 for line in f if json.loads(line)["method"] == "POST")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()
        if os.path.exists(self.log):
            os.unlink(self.log)


def executes(s, want=None):
    """The /v1/execute requests in s's access log. Each line is written after its answer is
    sent, so the last may still be on its way: with want, wait up to 10 s for that many."""
    deadline = time.monotonic() + 10
    while True:
        n = sum(1 for e in s.log_lines() if e.get("event") == "access" and
                e.get("path") == "/v1/execute")
        if want is None or n >= want or time.monotonic() > deadline:
            return n
        time.sleep(0.05)


def time_wait(port):
    """Sockets in TIME_WAIT to or from a loopback port (from /proc/net/tcp)."""
    n = 0
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            local, remote, state = fields[1], fields[2], fields[3]
            if state == "06" and (int(local.split(":")[1], 16) == port or
                                  int(remote.split(":")[1], 16) == port):
                n += 1
    return n


PROGRAMS = [
    ([], "print(6 * 7)"),
    ([], "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)"),
    ([], "def f():\n    raise ValueError('bad value')\nf()"),
    (["-t", "1"], "while True:\n    pass"),
    (["--output-limit", "100"], "print('x' * 5000)"),
    (["-l", "bash"], "echo hello from bash; exit 4"),
    (["-l", "javascript"], "console.log([1, 2, 3].map(x => x * 2).join(','))"),
    # serve inlines a one-shot's images; the remote backend keeps only what its caller asked.
    (["-l", "bash"], "printf '\\211PNG\\r\\n\\032\\nrest' > plot.png"),
]


class RemoteTests(Tests):
    CHECK_TEMP_LEFTOVERS = True

    def test_results_identical_to_local_runs(self):
        with serve() as a, serve() as b:
            for extra, code in PROGRAMS:
                local, lp = run_json(["--backend", BACKEND] + extra + ["-c", code])
                rem, rp = run_json(remote_args(url(a), url(b)) + extra + ["-c", code])
                assert rem["backend"] == "remote", rem
                assert same(local, rem), (code, local, rem)
                assert lp.returncode == rp.returncode, (code, lp.returncode, rp.returncode)
            # stdin travels; a run without --json passes the output through
            p = run(["run"] + remote_args(url(a)) + ["-i", "-l", "bash", "-c", "tr a-z A-Z"], input="shout\n")
            assert p.returncode == 0 and p.stdout == "SHOUT\n", (p.returncode, p.stdout, p.stderr)

    def test_streamed_flood_is_the_capped_record(self):
        # A flood passed through without --json: the remote's record, head and tail around
        # its one marker line (limit plus the note at most), once the run timed out.
        code = "while True:\n    print('x' * 100)"
        with serve() as a:
            p = run(["run"] + remote_args(url(a)) + ["-t", "2", "--output-limit", "1k", "-c",
                                                     code])
        m = re.search(r"\n\[\.\.\. execbox: [0-9]+ bytes omitted \.\.\.\]\n", p.stdout)
        assert m and m.start() == 512 and len(p.stdout) - m.end() == 512, p.stdout[-300:]
        assert "timed out" in p.stderr, p.stderr[-300:]

    def test_policy_is_sent_and_capped_by_the_remote(self):
        with serve("--timeout", "2", "--memory", "128M") as a:
            # asks for 5 s: the remote's maximum of 2 s applies instead of a refusal
            r, _ = run_json(remote_args(url(a)) + ["-t", "5", "-c", "import time\ntime.sleep(4)"])
            assert r["timed_out"] and r["exit_code"] == 124, r
            assert "2 seconds" in r["error"]["value"], r
            assert r["execution_time"] < 3.5, r
            # the field itself: a boolean; without it a limit above the maximum is still a 400
            hd = {"Authorization": f"Bearer {TOKEN}"}
            st, _, r = a.execute({"code": "print(1)", "timeout": 5, "cap": "yes"}, headers=hd)
            assert st == 400 and r["error"]["field"] == "cap", (st, r)
            st, _, r = a.execute({"code": "print(1)", "timeout": 5}, headers=hd)
            assert st == 400 and r["error"]["field"] == "timeout", (st, r)
            st, _, r = a.execute({"code": "print(1)", "timeout": 5, "memory": "1G", "cap": True},
                                 headers=hd)
            assert st == 200 and r["stdout"] == "1\n", (st, r)
            # a lower limit than the remote's is kept: the output cap travels
            r, _ = run_json(remote_args(url(a)) + ["--output-limit", "64", "-c", "print('y' * 999)"])
            assert r["stdout_truncated"] and r["stdout_bytes"] == 1000, r
            # a host directory never travels
            with tempfile.TemporaryDirectory() as ws:
                r, p = run_json(remote_args(url(a)) + ["-w", ws, "-c", "print(1)"])
            assert r["error"]["name"] == "SandboxError" and "workspace" in r["stderr"], r
            assert p.returncode == 125, p.returncode

    def test_round_robin_reuse_and_failover_when_one_dies(self):
        with serve() as a, serve() as b:
            with Server("--backend", "remote", "--remote", f"{url(a)},{url(b)}",
                        "--remote-token", TOKEN, "--workers", "1") as front:
                for i in range(20):
                    st, _, r = front.execute({"code": f"print({i} * 2)"})
                    assert st == 200 and r["stdout"] == f"{i * 2}\n", (st, r)
                    assert r["backend"] == "remote", r
                na, nb = executes(a, 10), executes(b, 10)
                assert na == 10 and nb == 10, (na, nb)
                # kept-alive connections: one per remote, not one per request
                assert time_wait(a.port) + time_wait(b.port) <= 2, \
                    (time_wait(a.port), time_wait(b.port))
                a.proc.kill()
                a.proc.wait()
                for i in range(10):
                    st, _, r = front.execute({"code": f"print({i} + 100)"})
                    assert st == 200 and r["stdout"] == f"{i + 100}\n", (st, r)
                nb = executes(b, 20)
                assert nb == 20, nb

    def test_failover_on_5xx_and_never_after_200(self):
        with serve() as b, Fake("unavailable") as bad:
            for _ in range(2):  # whichever comes first in turn, b runs it
                r, p = run_json(remote_args(bad.url, url(b)) + ["-c", "print('ok')"])
                assert r["stdout"] == "ok\n" and r["exit_code"] == 0, r
            assert bad.executes() >= 1
        # a remote that answered 200 and then broke off: no retry elsewhere
        with serve() as b, Fake("midbody") as mid:
            n0 = executes(b)
            r, p = run_json(remote_args(mid.url, url(b)) + ["-c", "print('once')"])
            if mid.executes() == 1:  # the fake came first in turn
                assert r["error"]["name"] == "SandboxError", r
                assert executes(b) == n0, "retried after a 200"
            # whatever the order, b never ran it twice
            assert executes(b) - n0 <= 1

    def test_misbehaving_remote_is_a_sandbox_error_never_a_hang(self):
        cases = {
            "garbage": "not JSON",
            "notrecord": "cannot read",
            "hang": "did not answer within",
            "midbody": "broke off",
            "reset": "broke off",
            "huge": "more than",
            "unavailable": "no remote could take the run",
        }
        for mode, words in cases.items():
            with Fake(mode) as f:
                t0 = time.time()
                r, p = run_json(remote_args(f.url) + ["-t", "1", "-c", "print(1)"],
                                timeout=60)
                took = time.time() - t0
                assert r["error"]["name"] == "SandboxError", (mode, r)
                assert r["exit_code"] == 1 and p.returncode == 125, (mode, r, p.returncode)
                assert words in r["error"]["value"], (mode, r["error"])
                assert r["backend"] == "remote", r
                assert took < 1 + MARGIN + 5, (mode, took)
        # nothing listens: the executor does not open, with the reason
        p = run(["run"] + remote_args("http://127.0.0.1:1") + ["-c", "print(1)"])
        assert p.returncode == 125 and "answer /v1/health" in p.stderr, p.stderr

    def test_cancellation_reaches_the_remote(self):
        sleeper = {"code": "import time\nprint('started', flush=True)\ntime.sleep(60)"}
        with serve() as back:
            with Server("--backend", "remote", "--remote", url(back), "--remote-token",
                        TOKEN) as front:
                # a client of the front hangs up: front cancels, the remote hop is aborted,
                # the back kills the sandbox
                c = socket.create_connection((front.host, front.port))
                body = json.dumps(sleeper).encode()
                c.sendall(b"POST /v1/execute HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
                          b"application/json\r\nContent-Length: " + str(len(body)).encode() +
                          b"\r\n\r\n" + body)
                wait_for(lambda: descendants(back.proc.pid), 20, "the sandbox on the back")
                t0 = time.time()
                c.close()
                wait_for(lambda: any(e.get("client_gone") for e in back.log_lines()), 10,
                         "the back to see its client gone")
                wait_for(lambda: not descendants(back.proc.pid), 10, "the sandbox killed")
                assert time.time() - t0 < 10
                gone = [e for e in back.log_lines() if e.get("client_gone")]
                assert gone[0]["status"] == 499, gone
            # Ctrl-C on `execbox run --backend remote`: the same path from the CLI
            p = subprocess.Popen([EXECBOX, "run"] + remote_args(url(back)) +
                                 ["-c", sleeper["code"]], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            wait_for(lambda: descendants(back.proc.pid), 20, "the sandbox on the back")
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=20)
            assert p.returncode == 130, (p.returncode, err)
            wait_for(lambda: not descendants(back.proc.pid), 10, "the sandbox killed")
            # the back writes its access line once the killed run's result is made: after the
            # sandbox is gone, not before
            wait_for(lambda: sum(1 for e in back.log_lines() if e.get("client_gone")) >= 2, 10,
                     "the back to log its second client gone")
            assert sum(1 for e in back.log_lines() if e.get("client_gone")) == 2

    def test_check_probes_health(self):
        with serve() as a, Fake("garbage") as f:
            p = run(["check"] + remote_args(url(a), "http://127.0.0.1:1"))
            assert p.returncode == 0, p.stdout + p.stderr
            assert f"backend {BACKEND}" in p.stdout and "1 of 2 answer" in p.stdout, p.stdout
            p = run(["check", "-b", "remote", "--remote", "http://127.0.0.1:1"])
            assert p.returncode == 1 and "unusable" in p.stdout, p.stdout
            # a wrong token still shows a healthy remote (health is open); the run is refused
            r, p = run_json(["--backend", "remote", "--remote", url(a), "--remote-token", "no",
                             "-c", "print(1)"])
            assert "401" in r["error"]["value"], r


if __name__ == "__main__":
    RemoteTests().main()
