# SPDX-License-Identifier: MIT
"""The gvisor backend end to end with Debian's runsc (ptrace platform here): the contract's
cases (result fields, stdin, timeout 124, tracebacks, output caps, workspace files) and the
jail's attack cases that apply to a gVisor sandbox (host files, read-only root, network,
privileges, pids, memory, a second kernel), and that nothing is left behind. Skips (77) where
runsc cannot run."""
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
from common import SkipTest, Tests, check, eq, run  # noqa: E402,F401


def gv(code, *args, **kw):
    return common.run_json(["-b", "gvisor", "-t", "60"] + list(args) + ["-c", code], **kw)


class GvisorTests(Tests):
    def __init__(self):
        p = run(["check", "-b", "gvisor"])
        if p.returncode != 0:
            print(f"SKIP: the gvisor backend is not usable here:\n{p.stdout}{p.stderr}")
            sys.exit(common.SKIP)
        self.host_dir = tempfile.mkdtemp(prefix="gvisor-host-", dir="/var/tmp")
        self.secret = os.path.join(self.host_dir, "secret.txt")
        with open(self.secret, "w") as f:
            f.write("host secret\n")

    # ---- the contract's cases ------------------------------------------------------------

    def test_result_fields_stdin_files(self):
        code = ("import sys, os\n"
                "print(6*7)\n"
                "print('in:', input())\n"
                "sys.stderr.write('warn\\n')\n"
                "open('out.txt', 'w').write('hello')\n"
                "os.makedirs('sub')\n"
                "open('sub/d.csv', 'w').write('a\\n')\n"
                "print(os.getcwd(), os.getuid())\n")
        r, p = gv(code, "--stdin", input="line one\n")
        eq(p.returncode, 0, p.stderr)
        eq(r["stdout"], "42\nin: line one\n/workspace 1000\n")
        eq(r["stderr"], "warn\n")
        eq(r["backend"], "gvisor")
        eq(r["error"], None)
        eq(sorted(f["path"] for f in r["files"]), ["out.txt", "sub/d.csv"])

    def test_traceback_and_exit(self):
        r, p = gv("def f():\n    raise ValueError('bad value')\nf()\n")
        eq(r["exit_code"], 1)
        eq(r["error"]["name"], "ValueError")
        eq(r["error"]["value"], "bad value")
        check('File "/code/main.py", line 3' in r["error"]["traceback"], r["error"])
        r, _ = gv("import sys\nprint('a')\nsys.exit(3)")
        eq(r["exit_code"], 3)
        eq(r["stdout"], "a\n")
        r, _ = gv("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
        eq(r["exit_code"], 137)
        eq(r["signal"], 9)

    def test_timeout(self):
        t0 = time.monotonic()
        r, p = common.run_json(["-b", "gvisor", "-t", "3", "-c",
                                "import time\nprint('start', flush=True)\ntime.sleep(60)"])
        took = time.monotonic() - t0
        eq(p.returncode, 124)
        eq(r["timed_out"], True)
        eq(r["killed_reason"], "timeout")
        eq(r["stdout"], "start\n")
        check(took < 15, f"took {took:.1f}s")

    def test_output_caps(self):
        r, _ = gv("import sys\nsys.stdout.write('x' * 200000)\n", "--output-limit", "1000")
        eq(r["stdout_truncated"], True)
        eq(r["stdout_bytes"], 200000)
        check(len(r["stdout"]) < 1200, len(r["stdout"]))

    def test_host_workspace(self):
        ws = tempfile.mkdtemp(prefix="gvisor-ws-", dir="/var/tmp")
        os.chmod(ws, 0o777)
        try:
            with open(os.path.join(ws, "in.txt"), "w") as f:
                f.write("given\n")
            r, p = gv("print(open('in.txt').read().strip())\nopen('made.txt','w').write('m')",
                      "-w", ws)
            eq(r["stdout"], "given\n", p.stderr)
            check(os.path.exists(os.path.join(ws, "made.txt")), "file not written back")
        finally:
            subprocess.run(["rm", "-rf", ws])

    # ---- walls -------------------------------------------------------------------------------

    def test_walls(self):
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        srv.setblocking(False)
        port = srv.getsockname()[1]
        code = f"""
import os, socket
def attempt(name, f):
    try:
        print(name, "OK", f())
    except Exception as e:
        print(name, "ERR", type(e).__name__)
attempt("secret", lambda: open({self.secret!r}).read())
attempt("root", lambda: os.listdir("/root"))
attempt("usr", lambda: open("/usr/escape", "w"))
attempt("etcw", lambda: open("/etc/passwd", "a"))
attempt("net", lambda: socket.create_connection(("127.0.0.1", {port}), 2))
attempt("dns", lambda: socket.getaddrinfo("deb.debian.org", 80))
status = open("/proc/self/status").read()
print("capeff", [l.split()[1] for l in status.splitlines() if l.startswith("CapEff")][0])
import ctypes
print("nnp", ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))
print("kernel", open("/proc/version").read().split()[2])
print("ls", sorted(os.listdir("/")))
"""
        r, p = gv(code)
        out = {}
        for line in r["stdout"].splitlines():
            k, _, v = line.partition(" ")
            out[k] = v
        eq(r["exit_code"], 0, r["stderr"])
        for k in ("secret", "root", "usr", "etcw", "net", "dns"):
            check(out[k].startswith("ERR"), f"{k}: {out[k]}")
        check(not os.path.exists("/usr/escape"), "wrote into the host's /usr")
        try:
            srv.accept()
            raise AssertionError("the sandbox reached a host socket")
        except BlockingIOError:
            pass
        srv.close()
        eq(out["capeff"], "0000000000000000")
        eq(out["nnp"], "1")
        host_kernel = open("/proc/version").read().split()[2]
        check(out["kernel"] != host_kernel, f"guest sees the host kernel {host_kernel}")
        for d in ("home", "root", "var", "run", "boot"):
            check(d not in out["ls"], f"/{d} visible: {out['ls']}")

    def test_pids_wall(self):
        # The cgroup holds gVisor's own threads too: the bound is pids + 128 less those.
        r, _ = gv("import subprocess\nps = []\n"
                  "for i in range(300):\n"
                  "    try:\n"
                  "        ps.append(subprocess.Popen(['sleep', '5']))\n"
                  "    except OSError as e:\n"
                  "        print('refused at', i, type(e).__name__)\n"
                  "        break\n"
                  "else:\n"
                  "    print('all 300 started')\n"
                  "for p in ps:\n"
                  "    p.kill()\n", "--pids", "12")
        # Either fork is refused, or the Sentry itself can get no more threads and the whole
        # sandbox dies (runsc exits 2): the processes stay bounded either way.
        check("all 300 started" not in r["stdout"], r["stdout"])
        if r["stdout"].startswith("refused at"):
            check(int(r["stdout"].split()[2]) < 12 + 128, r["stdout"])
        else:
            check(r["exit_code"] != 0, r)

    def test_thread_bomb_and_priority_walls(self):
        """The review's attack suite under -b gvisor: a thread bomb reached 1,024 live threads
        under --pids 32 (the host cgroup's bound, pids + 128, counts the Sentry's threads, not
        the guest's), and the guest lowered its nice value to -20 (gVisor checks no privilege
        on setpriority)."""
        code = """
import json, os, threading
out = {"uid": os.getuid(), "euid": os.geteuid()}
for line in open("/proc/self/status"):
    if line.startswith("CapEff"):
        out["capeff"] = line.split()[1]
import ctypes
out["nonewprivs"] = ctypes.CDLL(None, use_errno=True).prctl(39, 0, 0, 0, 0)  # PR_GET_NO_NEW_PRIVS
try:
    os.nice(-20)
    out["nice"] = os.nice(0)
except OSError as e:
    out["nice"] = type(e).__name__
try:
    os.setpriority(os.PRIO_PROCESS, 0, -1)
    out["setpriority"] = os.getpriority(os.PRIO_PROCESS, 0)
except OSError as e:
    out["setpriority"] = type(e).__name__
out["raise_nice"] = os.nice(3)  # lowering one's priority is always allowed
ev = threading.Event()
n = 0
try:
    for i in range(1024):
        threading.Thread(target=ev.wait).start()
        n += 1
except RuntimeError:
    pass
out["threads"] = n
ev.set()
print(json.dumps(out))
"""
        r, _ = gv(code, "--pids", "32")
        eq(r["exit_code"], 0, r["stderr"])
        import json
        o = json.loads(r["stdout"].strip().splitlines()[-1])
        print(f"     (threads started under --pids 32: {o['threads']}; nice: {o['nice']})")
        check(o["threads"] < 32, f"thread bomb not capped: {o}")
        eq(o["nice"], "PermissionError", o)
        eq(o["setpriority"], "PermissionError", o)
        eq(o["raise_nice"], 3, o)
        check(o["uid"] != 0 and o["euid"] != 0, o)
        eq(o["capeff"], "0000000000000000", o)
        eq(o["nonewprivs"], 1, o)

    def test_memory_wall(self):
        # 400 MB against a 96 MB cap (the wall the jail suites prove, here runsc's cgroup).
        r, _ = gv("b = bytearray(400 << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\n"
                  "print('allocated')", "-m", "96M")
        check("allocated" not in r["stdout"], "400 MB allocated under a 96 MB cap")
        check(r["exit_code"] != 0, r)

    def test_nothing_left(self):
        gv("print(1)")
        # A killed run leaves runsc state behind, which `runsc delete --force` must remove.
        common.run_json(["-b", "gvisor", "-t", "2", "-c", "import time; time.sleep(30)"])
        time.sleep(0.3)
        # This suite is the only user of the gvisor backend on the machine.
        left = subprocess.run(["pgrep", "-f", "execbox-gvisor-state"], capture_output=True,
                              text=True).stdout.strip()
        eq(left, "", "runsc processes left")
        tmp = os.environ.get("TMPDIR", "/tmp")
        dirs = [d for d in os.listdir(tmp) if d.startswith("execbox-gvisor-")]
        eq(dirs, [], "run directories left")
        state = [d for d in os.listdir(tmp) if d.startswith("execbox-gvisor-state")]
        eq(state, [], "runsc state left")
        mounts = open("/proc/self/mountinfo").read()
        check("execbox-gvisor-run" not in mounts, "a workspace tmpfs left mounted")

    def main(self):
        try:
            super().main()
        finally:
            subprocess.run(["rm", "-rf", self.host_dir])


if __name__ == "__main__":
    GvisorTests().main()
