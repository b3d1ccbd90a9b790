# SPDX-License-Identifier: MIT
"""Sessions in the library, through the jail (root): state kept across cells; every way a cell
can fail (exception, SystemExit, timeout, OOM kill, a fork bomb, killing its own state) leaves
the state exactly as before it; rollback off keeps partial effects; two live sessions cannot
reach each other (each attack runs for real); the walls hold inside a cell as in a cold run;
workspace files round-trip and escapes are refused; a session killed or freed leaves no
process and no cgroup behind."""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import SKIP, Tests, run  # noqa: E402
from templates import ATTACKER, OWNER  # noqa: E402

DRIVER = os.path.join(os.environ.get("EXECBOX_BUILD", "build"), "tests", "session_driver")
DIGEST = ("import hashlib\n"
          "print(hashlib.sha256(repr(sorted((k, repr(v)) for k, v in globals().items() "
          "if not k.startswith('_') and k != 'hashlib')).encode()).hexdigest())")


class Driver:
    def __init__(self, *args):
        self.p = subprocess.Popen([DRIVER] + list(args), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)

    def __call__(self, **m):
        self.p.stdin.write(json.dumps(m) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        assert line, f"the driver died ({self.p.poll()})"
        return json.loads(line)

    def new(self, **kw):
        r = self(op="new", **kw)
        assert "s" in r, r
        return r["s"]

    def run(self, s, code, **kw):
        r = self(op="run", s=s, code=code, **kw)
        assert "exit_code" in r, r
        return r

    def digest(self, s):
        r = self.run(s, DIGEST)
        assert r["exit_code"] == 0, r
        return r["stdout"]

    def close(self):
        self.p.stdin.close()
        assert self.p.wait(timeout=60) == 0


def cgroups_of(pid):
    """The cgroups of execbox process pid's sandboxes (execbox-<pid>-...)."""
    return glob.glob(f"/sys/fs/cgroup/**/execbox-{pid}-*", recursive=True)


class SessionTests(Tests):
    def setup(self):
        if os.geteuid() != 0:
            raise SystemExit(SKIP)

    def test_state_and_every_rollback(self):
        d = Driver()
        s = d.new(policy={"memory": "256M", "timeout": 5, "pids": 32})
        r = d.run(s, "x = 41\nitems = [1, 2]")
        assert r["exit_code"] == 0 and not r["rolled_back"] and r["execution_count"] == 1, r
        r = d.run(s, "x + 1")
        assert r["results"] == [{"text": "42", "is_main_result": True}], r
        before = d.digest(s)
        failing = {
            "exception": "x = 0\nitems.append(3)\n1/0",
            "exit": "x = 0\nimport sys; sys.exit(3)",
            "timeout": "x = 0\nwhile True: pass",
            "oom": "x = 0\nbig = bytearray(1 << 30)",
            "forkbomb": "x = 0\nimport os\nwhile True:\n    try: os.fork()\n    except OSError: pass",
            "os._exit": "x = 0\nimport os; os._exit(9)",
        }
        for what, code in failing.items():
            r = d.run(s, code, timeout=3)
            assert r["rolled_back"], (what, r)
            assert r["exit_code"] != 0, (what, r)
            assert d.digest(s) == before, what
        r = d.run(s, "x, items")
        assert r["results"][0]["text"] == "(41, [1, 2])", r
        assert d(op="info", s=s)["rolled_back"] == len(failing)
        # A cell that kills the state it was forked from and then ends normally is the new
        # state: the session goes on from after it.
        r = d.run(s, "import os, signal\nx = 0\nos.kill(os.getppid(), signal.SIGKILL)")
        assert r["exit_code"] == 0 and not r["rolled_back"], r
        assert d.run(s, "x")["results"][0]["text"] == "0"
        d.close()

    def test_timeout_and_oom_are_reported(self):
        d = Driver()
        s = d.new(policy={"memory": "128M", "timeout": 2})
        r = d.run(s, "while True: pass")
        assert r["timed_out"] and r["exit_code"] == 124 and r["error"]["name"] == "Timeout", r
        r = d.run(s, "b = bytearray(1 << 30)")
        assert r["oom_killed"] and r["error"]["name"] == "MemoryLimit", r
        assert d.run(s, "print('alive')")["stdout"] == "alive\n"
        d.close()

    def test_no_rollback_keeps_partial_effects(self):
        d = Driver()
        s = d.new(rollback=False)
        d.run(s, "x = 1")
        r = d.run(s, "x = 2\n1/0")
        assert r["exit_code"] == 1 and not r["rolled_back"], r
        assert r["error"]["name"] == "ZeroDivisionError", r
        assert d.run(s, "x")["results"][0]["text"] == "2"
        # a timeout is still rolled back: the cell never ended
        r = d.run(s, "x = 3\nwhile True: pass", timeout=1)
        assert r["rolled_back"], r
        assert d.run(s, "x")["results"][0]["text"] == "2"
        d.close()

    def test_cell_may_not_ask_for_more_than_its_session(self):
        d = Driver()
        s = d.new(policy={"timeout": 2})
        r = d(op="run", s=s, code="pass", timeout=5)
        assert r.get("code") == -1 and r.get("field") == "timeout", r  # -EPERM: more than it has
        d.close()

    def test_rich_results(self):
        d = Driver("--preload", "numpy,pandas")
        s = d.new()
        r = d.run(s, "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})\ndf")
        assert r["results"][0]["is_main_result"] and "<table" in r["results"][0]["html"], r
        r = d.run(s, "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
                     "plt.plot([1, 3, 2]); plt.show()\ndisplay('shown')\nNone")
        kinds = [(bool(x.get("png")), x["text"]) for x in r["results"]]
        assert kinds == [(False, "'shown'"), (True, "<Figure size 640x480 with 1 Axes>")], kinds
        assert r["stderr"] == "", r  # plt.show() under Agg says nothing
        assert d.run(s, "df.shape")["results"][0]["text"] == "(2, 1)"
        d.close()

    def test_two_sessions_cannot_reach_each_other(self):
        d1, d2 = Driver(), Driver()
        a, b = d1.new(policy={"timeout": 30}), d2.new(policy={"timeout": 30})
        d1.run(a, "secret = 'a'")
        import threading
        out = {}
        t = threading.Thread(target=lambda: out.update(owner=d1.run(a, OWNER)))
        t.start()
        import time
        time.sleep(1.5)
        got = json.loads(d2.run(b, ATTACKER)["stdout"].strip().splitlines()[-1])
        t.join(60)
        made = json.loads(out["owner"]["stdout"].strip().splitlines()[-1])
        assert not got["abstract_connect"] and not got["proc_net_unix_sees_it"], got
        assert not got["path_connect"] and not got["loopback_connect"], got
        assert got["files_seen"] == [] and not got["shm_found"] and not got["mq_found"], got
        # its init, its state and its cell: nothing of the other session
        assert len(got["proc_pids"]) <= 3 and got["signalable"] == got["proc_pids"], got
        assert made["connected_to_me"] == [] and made["files_intact"], made
        assert "error" in d2(op="run", s=b, code="secret") or \
            d2.run(b, "secret")["error"]["name"] == "NameError"
        assert d1.run(a, "secret")["results"][0]["text"] == "'a'"
        d1.close()
        d2.close()

    def test_walls_hold_in_a_cell(self):
        d = Driver()
        s = d.new()
        r = d.run(s, "import os, socket, json\nres = {}\n"
                     "try:\n    socket.create_connection(('127.0.0.1', 22), 1); res['net'] = True\n"
                     "except OSError:\n    res['net'] = False\n"
                     "try:\n    open('/etc/passwd', 'a'); res['etc'] = True\n"
                     "except OSError:\n    res['etc'] = False\n"
                     "res['uid'] = os.getuid()\n"
                     "res['caps'] = [l for l in open('/proc/self/status') if l.startswith('CapEff')][0].split()[1]\n"
                     "res['nnp'] = [l for l in open('/proc/self/status') if l.startswith('NoNewPrivs')][0].split()[1]\n"
                     "res['seccomp'] = [l for l in open('/proc/self/status') if l.startswith('Seccomp:')][0].split()[1]\n"
                     "try:\n    os.unshare(os.CLONE_NEWUSER); res['unshare'] = True\n"
                     "except (OSError, AttributeError):\n    res['unshare'] = False\n"
                     "print(json.dumps(res))")
        got = json.loads(r["stdout"])
        assert got == {"net": False, "etc": False, "uid": got["uid"], "caps": "0000000000000000",
                       "nnp": "1", "seccomp": "2", "unshare": False}, got
        assert got["uid"] != 0, got
        d.close()

    def test_files(self):
        d = Driver()
        s = d.new()
        assert d(op="put", s=s, path="data/in.txt", data="hello")["ok"]
        r = d.run(s, "print(open('data/in.txt').read()); open('out.txt', 'w').write('bye')\n"
                     "import os; os.symlink('/etc/passwd', 'link'); os.symlink('/', 'dirlink')")
        assert r["stdout"] == "hello\n", r
        assert d(op="get", s=s, path="out.txt")["data"] == "bye"
        listed = [f["path"] for f in d(op="list", s=s)["files"]]
        assert listed == ["data/in.txt", "out.txt"], listed
        for bad in ("../x", "/etc/passwd", "link", "dirlink/etc/passwd", "a//b", "./x", ""):
            r = d(op="get", s=s, path=bad)
            assert r.get("field") == "path" or r.get("code") == -2, (bad, r)
            assert "data" not in r, (bad, r)
        r = d(op="put", s=s, path="link", data="owned")  # replaces the link, not /etc/passwd
        assert r.get("ok"), r
        assert "owned" not in open("/etc/passwd").read()
        assert d(op="put", s=s, path="dirlink/x", data="x").get("field") == "path"
        assert d(op="rm", s=s, path="out.txt")["ok"]
        assert d(op="get", s=s, path="out.txt").get("code") == -2
        d.close()

    def test_nothing_left_behind(self):
        d = Driver()
        s = d.new()
        d.run(s, "import subprocess; p = subprocess.Popen(['sleep', '1000'])")  # kept, as Jupyter
        s2 = d.new()
        d.run(s2, "x = 1")
        d(op="kill", s=s2)
        assert "error" in d(op="run", s=s2, code="x")
        d(op="free", s=s2)
        d(op="free", s=s)
        assert len(cgroups_of(d.p.pid)) > 0  # the template's, until the executor closes
        d.close()
        import time
        deadline = time.time() + 10
        while cgroups_of(d.p.pid) and time.time() < deadline:
            time.sleep(0.1)
        assert not cgroups_of(d.p.pid), cgroups_of(d.p.pid)
        left = subprocess.run(["pgrep", "-f", "sleep 1000"], capture_output=True, text=True)
        assert left.stdout.strip() == "", left.stdout


    def test_rich_one_shot(self):
        """`execbox run --rich`: a one-shot run as a cell of its own session."""
        from common import run_json
        res, p = run_json(["--rich", "-c", "print('hi')\ndisplay({'a': 1})\n6 * 7"])
        assert p.returncode == 0 and res["stdout"] == "hi\n", (p.returncode, res)
        assert res["results"] == [{"text": "{'a': 1}", "is_main_result": False},
                                  {"text": "42", "is_main_result": True}], res
        assert "execution_count" not in res and "rolled_back" not in res, res
        res, p = run_json(["--rich", "-t", "1", "-c", "while True: pass"])
        assert p.returncode == 124 and res["timed_out"], res
        res, p = run_json(["--rich", "-c", "1/0"])
        assert p.returncode == 1 and res["error"]["name"] == "ZeroDivisionError", res
        p = run(["run", "--rich", "-b", "subprocess", "-c", "print(1)"])
        assert p.returncode == 125 and "rich results" in p.stderr, p.stderr


if __name__ == "__main__":
    if not os.path.exists(DRIVER):
        print(f"skip: {DRIVER} was not built")
        sys.exit(SKIP)
    if os.geteuid() != 0:
        print("skip: sessions need root (the jail's templates)")
        sys.exit(SKIP)
    SessionTests().main()
