# SPDX-License-Identifier: MIT
"""The docker backend end to end, against podman's Docker-compatible service on a private socket
(tests/docker/setup.sh): results, walls, errors, concurrency, and no container left behind."""
import fcntl
import json
import os
import shutil
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
from common import SkipTest, Tests, run, run_json  # noqa: E402,F401

SETUP = os.path.join(common.SOURCE, "tests", "docker", "setup.sh")
CACHE = os.environ.get("EXECBOX_TEST_CACHE", "/var/cache/execbox-test")
HOST = None
STATE = None


def docker(args, **kw):
    return run_json(["-b", "docker", "--docker-host", HOST] + list(args), **kw)


def api(method, path):
    """One call on the engine socket (stdlib only)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(HOST[len("unix://"):])
    s.sendall(f"{method} {path} HTTP/1.0\r\nHost: d\r\n\r\n".encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def our_containers():
    status, body = api("GET", '/v1.41/containers/json?all=1&filters=%7B%22label%22%3A%5B%22org.execbox.run%22%5D%7D')
    assert status == 200, status
    return json.loads(body)


def assert_none_left():
    left = our_containers()
    assert left == [], f"containers left behind: {[c.get('Names') for c in left]}"


class FakeEngine:
    """A unix-socket HTTP server standing in for an engine that misbehaves."""

    def __init__(self, path, mode):
        self.path = path
        mode_ = mode

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                if mode_ == "hang":
                    time.sleep(30)
                    return
                if self.path == "/_ping":
                    body = b"OK"
                else:
                    body = json.dumps({"ApiVersion": "1.24", "Version": "1.12.0"}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class S(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

        self.srv = S(path, H)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class DockerTests(Tests):
    def test_check_reports_engine_and_walls(self):
        p = run(["check", "-b", "docker", "--docker-host", HOST])
        assert p.returncode == 0, p.stdout + p.stderr
        for s in ("podman", "memory cap", "pids cap", "network", "read-only root", "ready"):
            assert s in p.stdout, (s, p.stdout)

    def test_good_code_and_identity(self):
        r, p = docker(["-c", "import os\nprint(6*7)\nprint(os.getuid(), os.getcwd())\n"
                       "s=open('/proc/self/status').read()\n"
                       "print([l for l in s.splitlines() if l.startswith(('CapEff','NoNewPrivs'))])"])
        assert p.returncode == 0 and r["exit_code"] == 0, r
        out = r["stdout"].splitlines()
        assert out[0] == "42" and out[1] == "65534 /workspace", r
        assert "CapEff:\\t0000000000000000" in out[2] and "NoNewPrivs:\\t1" in out[2], out[2]
        assert r["backend"] == "docker" and r["error"] is None and r["cpu_time"] > 0, r

    def test_guest_cannot_reach_the_bootstrap(self):
        # pid 1 (the bootstrap) is non-dumpable: its environ and memory, which held the nonce
        # that marks its report, are closed to the guest although both run as nobody; and it
        # survives the signals the guest can send it.
        code = ("import os, signal\n"
                "for f in ('/proc/1/environ', '/proc/1/mem'):\n"
                "    try:\n        open(f, 'rb').read(1); print('read', f)\n"
                "    except OSError as e:\n        print(type(e).__name__)\n"
                "for s in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):\n"
                "    os.kill(1, s)\n"
                "print('alive')\n")
        r, _ = docker(["-c", code])
        assert r["stdout"].split() == ["PermissionError", "PermissionError", "alive"], r
        assert r["exit_code"] == 0 and r["cpu_time"] is not None and r["error"] is None, r

    def test_stdin_bash_and_files(self):
        r, p = docker(["-l", "bash", "-i", "-c", "read x; echo got $x; mkdir -p d; "
                       "printf abc > d/out.txt; ln -s /etc/passwd lnk"], input="hello\n")
        assert r["stdout"] == "got hello\n" and r["exit_code"] == 0, r
        assert r["files"] == [{"path": "d/out.txt", "size": 3, "mime": "text/plain",
                               "origin": "created"}], r["files"]

    def test_exit_codes_and_signals(self):
        r, p = docker(["-c", "import sys; print('x'); sys.exit(3)"])
        assert p.returncode == 3 and r["exit_code"] == 3 and r["signal"] is None, r
        # exit(137) is a plain exit, not a kill: the bootstrap saw which it was.
        r, _ = docker(["-c", "import sys; sys.exit(137)"])
        assert r["exit_code"] == 137 and r["signal"] is None and not r["oom_killed"], r
        r, _ = docker(["-c", "import os; os.kill(os.getpid(), 11)"])
        assert r["exit_code"] == 139 and r["signal"] == 11, r
        r, _ = docker(["-c", "raise ValueError('boom')"])
        assert r["exit_code"] == 1 and r["error"]["name"] == "ValueError", r

    def test_timeout_keeps_partial_output(self):
        r, p = docker(["-t", "1.5", "-c", "import time\nprint('before', flush=True)\ntime.sleep(60)"],
                      timeout=60)
        assert p.returncode == 124 and r["exit_code"] == 124 and r["timed_out"], r
        assert r["killed_reason"] == "timeout" and r["stdout"] == "before\n", r
        assert r["execution_time"] < 30, r
        assert_none_left()

    def test_memory_cap_and_oom(self):
        # The wall first: the container's memory cgroup carries the cap, and a program within
        # it runs.
        probe = ("import os\n"
                 "for f in ('/sys/fs/cgroup/memory/memory.limit_in_bytes', '/sys/fs/cgroup/memory.max'):\n"
                 "    if os.path.exists(f): print(open(f).read().strip())\n"
                 "x = bytearray(16 << 20)\nprint('ok')")
        r, _ = docker(["-m", "64M", "-c", probe])
        assert r["stdout"].split() == [str(64 << 20), "ok"], r
        # Then past it: killed, and reported as OOM only because the cgroup's counter proves it.
        r, p = docker(["-m", "64M", "-c", "x = bytearray(512 << 20)\nprint('survived')"])
        assert "survived" not in r["stdout"], r
        assert p.returncode == 137 and r["exit_code"] == 137 and r["signal"] == 9, r
        assert r["oom_killed"] and r["killed_reason"] == "memory", r
        assert r["error"]["name"] == "MemoryLimit", r

    def test_pids_cap(self):
        # Bounded check first: 40 sleeping children under a cap of 16 must hit the wall.
        code = ("import os, time\nn = 0\nkids = []\n"
                "for i in range(40):\n"
                "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
                "    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n"
                "    kids.append(pid)\n"
                "print(len(kids))\n")
        r, _ = docker(["--pids", "16", "-t", "20", "-c", code], timeout=60)
        n = int(r["stdout"].strip())
        assert 1 <= n < 16, r
        # Now the bomb, behind the wall just seen holding.
        bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
        r, p = docker(["--pids", "16", "-t", "2", "-c", bomb], timeout=60)
        assert r["exit_code"] == 124 and r["timed_out"], r
        assert_none_left()

    def test_no_network(self):
        code = ("import os, socket\nprint(sorted(os.listdir('/sys/class/net')))\n"
                "s = socket.socket(); s.settimeout(3)\n"
                "try:\n    s.connect(('1.1.1.1', 80)); print('connected')\n"
                "except OSError as e:\n    print('refused', e.errno)\n")
        r, _ = docker(["-c", code])
        lines = r["stdout"].splitlines()
        assert lines[0] == "['lo']" and lines[1].startswith("refused"), r

    def test_network_allow_is_refused_not_opened(self):
        # The docker backend cannot enforce an allow-list: it refuses, rather than run the code
        # with the engine's default (open) network or silently with none.
        r, p = docker(["--network", "allow", "--allow-host", "pypi.org", "-c", "print('ran')"])
        assert r["exit_code"] != 0 and "ran" not in r["stdout"], r
        assert r["error"]["name"] == "SandboxError", r
        assert "not available with the 'docker' backend" in r["stderr"], r

    def test_read_only_root_and_sized_tmpfs(self):
        code = ("import errno\n"
                "for p in ('/etc/x', '/usr/x', '/x', '/run/x', '/var/tmp/x'):\n"
                "    try:\n        open(p, 'w'); print('wrote', p)\n"
                "    except OSError as e:\n        print(errno.errorcode[e.errno])\n"
                "open('/tmp/a', 'w').write('x'); open('/workspace/b', 'w').write('y')\n"
                "try:\n    open('/tmp/big', 'wb').write(b'x' * (8 << 20)); print('big')\n"
                "except OSError as e:\n    print(errno.errorcode[e.errno])\n")
        r, _ = docker(["--tmpfs", "4M", "-c", code])
        assert r["stdout"].split() == ["EROFS"] * 5 + ["ENOSPC"], r
        # Every writable mount is one of ours, and sized.
        r, _ = docker(["--tmpfs", "4M", "-c", "for l in open('/proc/self/mounts'):\n"
                       "    f = l.split()\n"
                       "    if 'rw' in f[3].split(',') and f[2] == 'tmpfs': print(f[1], f[3])"])
        rw = dict(line.split(" ", 1) for line in r["stdout"].splitlines())
        assert set(rw) <= {"/tmp", "/workspace", "/dev", "/dev/shm", "/sys/fs/cgroup",
                           "/proc/keys", "/proc/timer_list", "/proc/scsi", "/proc/kcore",
                           "/proc/latency_stats", "/proc/sched_debug", "/sys/firmware",
                           "/proc/acpi", "/sys/dev/block", "/sys/devices/virtual/powercap"}, rw
        assert "size=4096k" in rw["/tmp"] and "size=4096k" in rw["/dev/shm"], rw

    def test_output_caps(self):
        r, _ = docker(["--output-limit", "1000", "-c",
                       "import sys\nprint('a' * 100000)\nsys.stderr.write('e' * 5000)"])
        assert r["stdout_truncated"] and r["stdout_bytes"] == 100001, r
        assert r["stderr_truncated"] and r["stderr_bytes"] == 5000, r
        assert len(r["stdout"]) < 1200 and "bytes omitted" in r["stdout"], len(r["stdout"])

    def test_output_flood_is_stopped(self):
        # Bounded (at most 1 GiB, then it ends by itself): the engine keeps every byte of a
        # container's output on its disk, so past 64 MiB the container is killed.
        code = ("import sys\nfor i in range(1024):\n    sys.stdout.buffer.write(b'x' * (1 << 20))\n"
                "sys.stderr.write('done\\n')\n")
        r, p = docker(["--output-limit", "1K", "-t", "60", "-c", code], timeout=120)
        assert r["killed_reason"] == "output_limit" and r["exit_code"] == 137, r
        assert "done" not in r["stderr"] and r["stdout_truncated"], r
        assert (64 << 20) < r["stdout_bytes"] < (1 << 30), r
        assert len(r["stdout"]) < 2000, len(r["stdout"])
        assert_none_left()

    def test_concurrent_runs(self):
        results = {}

        def one(i):
            results[i] = docker(["-c", f"import time; time.sleep(0.5); print({i} * 3)"])

        ts = [threading.Thread(target=one, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for i in range(4):
            r, p = results[i]
            assert p.returncode == 0 and r["stdout"] == f"{i * 3}\n", r
        assert_none_left()

    def test_threads_on_one_executor_and_cancel(self):
        exe = os.path.join(os.environ.get("EXECBOX_BUILD", os.path.join(common.SOURCE, "build")),
                           "tests", "docker_threads")
        if not os.path.exists(exe):
            raise SkipTest(f"{exe} not built")
        p = subprocess.run([exe, HOST], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        res = {int(line.split(" ", 1)[0]): json.loads(line.split(" ", 1)[1])
               for line in p.stdout.splitlines()}
        assert sorted(res) == [0, 1, 2, 3], p.stdout
        c = res[0]
        assert c["killed_reason"] == "cancelled" and c["exit_code"] == 137, c
        # (the engine may start it late: the cancel can come before the program printed)
        assert c["stdout"] in ("", "started\n") and c["execution_time"] < 20, c
        for i in (1, 2, 3):
            assert res[i]["exit_code"] == 0 and res[i]["stdout"] == f"{i * 11}\n", res[i]
        assert_none_left()

    def test_errors_are_clear_and_fast(self):
        d = tempfile.mkdtemp(prefix="execbox-docker-")
        try:
            # No socket.
            p = run(["run", "-b", "docker", "--docker-host", f"unix://{d}/none.sock", "-c", "1"])
            assert p.returncode == 125 and "no Docker engine socket" in p.stderr, p.stderr
            # Image missing.
            p = run(["run", "-b", "docker", "--docker-host", HOST, "--image",
                     "execbox-no-such-image:1", "-c", "1"])
            assert p.returncode == 125 and "missing" in p.stderr, p.stderr
            # A host directory cannot be mounted (the engine may be remote).
            p = run(["run", "-b", "docker", "--docker-host", HOST, "-w", d, "-c", "1"])
            assert p.returncode == 125 and "host directories" in p.stderr, p.stderr
            # Engine too old.
            old = FakeEngine(f"{d}/old.sock", "old")
            p = run(["run", "-b", "docker", "--docker-host", f"unix://{d}/old.sock", "-c", "1"])
            old.close()
            assert p.returncode == 125 and "too old" in p.stderr, p.stderr
            # An engine that never answers: a bounded wait, then a reason, never a hang.
            hang = FakeEngine(f"{d}/hang.sock", "hang")
            t0 = time.monotonic()
            p = run(["run", "-b", "docker", "--docker-host", f"unix://{d}/hang.sock", "-c", "1"],
                    timeout=60)
            hang.close()
            assert p.returncode == 125 and "_ping" in p.stderr, p.stderr
            assert time.monotonic() - t0 < 30
            # Permission denied on the socket (as an unprivileged user; root passes any mode).
            p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                common.EXECBOX, "run", "-b", "docker", "--docker-host", HOST,
                                "-c", "1"], capture_output=True, text=True, timeout=60)
            if p.stderr.startswith("setpriv:"):
                # The build tree is not reachable by nobody (e.g. a clone under /root).
                print(f"note: permission check not run: {p.stderr.strip()}")
            else:
                assert p.returncode == 125 and \
                    "permission denied on the Docker socket" in p.stderr, p.stderr
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_runtime_ignored_is_refused(self):
        """podman's Docker API ignores HostConfig.Runtime: asking for runsc on an engine whose
        default is runc must fail clearly, never run under runc."""
        if not shutil.which("runsc"):
            raise SkipTest("runsc is not installed (scripts/deps/gvisor.apt)")
        p = run(["run", "-b", "docker", "--docker-host", HOST, "--runtime", "runsc", "-c",
                 "print(1)"])
        assert p.returncode == 125, (p.returncode, p.stdout, p.stderr)
        assert "not 'runsc'" in p.stderr and "ignores" in p.stderr, p.stderr
        assert p.stdout == "", p.stdout
        assert_none_left()

    def test_runsc_as_the_engines_runtime(self):
        """`--runtime runsc` works where runsc is the engine's own runtime: a second podman
        service on the same storage (setup.sh start-runsc: runsc as podman's default, with
        runsc's --network=none and --platform=ptrace). The code sees gVisor's kernel, the walls
        still hold, and no container is left."""
        if not shutil.which("runsc"):
            raise SkipTest("runsc is not installed (scripts/deps/gvisor.apt)")
        p = subprocess.run(["bash", SETUP, "start-runsc", STATE], capture_output=True,
                           text=True, timeout=120)
        if p.returncode == 77:
            raise SkipTest(p.stderr.strip())
        assert p.returncode == 0, p.stderr
        host = p.stdout.strip().splitlines()[-1]
        code = ("import os, socket\n"
                "print(open('/proc/version').read().split()[2])\n"
                "try:\n    open('/usr/x', 'w')\nexcept OSError as e:\n    print('ro', e.errno)\n"
                "try:\n    socket.create_connection(('10.0.2.2', 80), timeout=2)\n"
                "except OSError as e:\n    print('net', type(e).__name__)\n"
                "open('out.txt', 'w').write('x')\n")
        r, p = common.run_json(["-b", "docker", "--docker-host", host, "--runtime", "runsc",
                                "-c", code])
        assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
        kernel, ro, net = r["stdout"].splitlines()
        assert kernel != os.uname().release, f"the host's kernel {kernel}: not under gVisor"
        assert ro in ("ro 30", "ro 13"), ro  # EROFS (or EACCES as nobody)
        assert net.startswith("net "), net
        assert [f["path"] for f in r["files"]] == ["out.txt"], r["files"]
        # The same engine refuses another runtime it does not run.
        p = run(["run", "-b", "docker", "--docker-host", host, "--runtime", "runc", "-c",
                 "print(1)"])
        assert p.returncode == 125 and "runc" in p.stderr, (p.returncode, p.stderr)
        assert_none_left()

    def test_zz_no_container_left(self):
        assert_none_left()


def main():
    global HOST, STATE
    os.makedirs(CACHE, exist_ok=True) if os.geteuid() == 0 else None
    lock_path = os.path.join(CACHE, "test.lock") if os.geteuid() == 0 else "/tmp/execbox-docker.lock"
    lock = open(lock_path, "w")
    fcntl.flock(lock, fcntl.LOCK_EX)  # one podman service on the shared storage at a time
    STATE = tempfile.mkdtemp(prefix="execbox-docker-state-")
    t0 = time.monotonic()
    p = subprocess.run(["bash", SETUP, "start", STATE], capture_output=True, text=True,
                       timeout=1800)
    sys.stderr.write(p.stderr)
    if p.returncode == common.SKIP:
        print(f"skip: {p.stderr.strip()}")
        sys.exit(common.SKIP)
    if p.returncode != 0:
        print(f"FAIL setup: rc={p.returncode}")
        sys.exit(1)
    HOST = p.stdout.strip().splitlines()[-1]
    print(f"engine at {HOST}, ready in {time.monotonic() - t0:.1f}s", flush=True)
    try:
        DockerTests().main()
    finally:
        subprocess.run(["bash", SETUP, "stop", STATE], timeout=120)
        shutil.rmtree(STATE, ignore_errors=True)


if __name__ == "__main__":
    main()
