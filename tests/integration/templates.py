# SPDX-License-Identifier: MIT
"""Templates (jail, python): warm runs are forks of one interpreter. Through `execbox serve
--pool`, with real HTTP on loopback: two runs of one template alive at the same time cannot reach
each other (each attack runs for real), forks get unique random state, a template is replaced
after its generation bound, a killed template or a failing fork still gives structured results
and leaves nothing behind, and warm output matches cold output byte for byte."""
import concurrent.futures
import glob
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import SKIP, SkipTest, Tests, run  # noqa: E402
import serve  # noqa: E402
from serve import Server  # noqa: E402

JSON = {"Content-Type": "application/json"}


def execute(srv, code, timeout=60, **fields):
    body = dict(fields, code=code)
    st, _, res = srv.execute(body, headers=JSON, timeout=timeout)
    assert st == 200, (st, res)
    return res


def out_json(res):
    assert res["exit_code"] == 0, res
    return json.loads(res["stdout"].strip().splitlines()[-1])


def ppid(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def template_pids(owner):
    """Pids of the template interpreters of the execbox process owner: each is the child of
    its sandbox's init, itself a child of owner (other tests' templates are left alone)."""
    pids = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            with open(d + "/cmdline", "rb") as f:
                if b"_execbox_template()" in f.read() and ppid(ppid(int(d[6:]))) == owner:
                    pids.append(int(d[6:]))
        except (OSError, ValueError, IndexError):
            pass
    return pids


def reuse_expected():
    """Whether emptied cgroups are kept for reuse here: v1, or v2 from Linux 6.12."""
    if not os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        return True
    major, minor = (int(x) for x in re.match(r"(\d+)\.(\d+)", os.uname().release).groups())
    return (major, minor) >= (6, 12)


def cgroups_of(pid):
    """cgroup directories named after an execbox process (execbox-<pid>-...)."""
    return glob.glob(f"/sys/fs/cgroup/**/execbox-{pid}-*", recursive=True)


OWNER = r'''
import ctypes, json, os, socket, time
libc = ctypes.CDLL(None, use_errno=True)
made = {}
a = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); a.bind("\0execbox-tpl-probe"); a.listen(1)
p = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); p.bind("/tmp/tpl-probe.sock"); p.listen(1)
try:
    l = socket.socket(); l.bind(("127.0.0.1", 47654)); l.listen(1); l.setblocking(False)
    made["loopback"] = True
except OSError as e:
    l = None; made["loopback"] = str(e)
for d in ("/tmp", "/dev/shm", "/workspace"):
    with open(d + "/tpl-secret", "w") as f:
        f.write("secret")
made["shm"] = libc.shmget(0x7e57, 4096, 0o1000 | 0o600)
libc.mq_open.restype = ctypes.c_int
made["mq"] = libc.mq_open(b"/tpl-probe", os.O_CREAT | os.O_RDWR, 0o600, None)
made["mq_errno"] = ctypes.get_errno() if made["mq"] < 0 else 0
made["pid"] = os.getpid()
a.setblocking(False); p.setblocking(False)
time.sleep(4)
hit = []
for s in (a, p, l):
    if s is None:
        continue
    try:
        s.accept(); hit.append(str(s))
    except BlockingIOError:
        pass
made["connected_to_me"] = hit
made["files_intact"] = all(open(d + "/tpl-secret").read() == "secret"
                           for d in ("/tmp", "/dev/shm", "/workspace"))
print(json.dumps(made))
'''

ATTACKER = r'''
import ctypes, json, os, signal, socket
libc = ctypes.CDLL(None, use_errno=True)
got = {}
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("\0execbox-tpl-probe"); got["abstract_connect"] = True
except OSError:
    got["abstract_connect"] = False
got["proc_net_unix_sees_it"] = "execbox-tpl-probe" in open("/proc/net/unix").read()
b = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    b.bind("\0execbox-tpl-probe"); got["abstract_bind_free"] = True
except OSError:
    got["abstract_bind_free"] = False
s2 = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s2.connect("/tmp/tpl-probe.sock"); got["path_connect"] = True
except OSError:
    got["path_connect"] = False
c = socket.socket(); c.settimeout(1)
try:
    c.connect(("127.0.0.1", 47654)); got["loopback_connect"] = True
except OSError:
    got["loopback_connect"] = False
got["files_seen"] = [d for d in ("/tmp", "/dev/shm", "/workspace")
                     if os.path.exists(d + "/tpl-secret")]
got["shm_found"] = libc.shmget(0x7e57, 0, 0) != -1
got["mq_found"] = libc.mq_open(b"/tpl-probe", os.O_RDWR) != -1
pids = sorted(int(x) for x in os.listdir("/proc") if x.isdigit())
got["proc_pids"] = pids
alive = []
for pid in range(1, 4096):
    try:
        os.kill(pid, 0); alive.append(pid)
    except ProcessLookupError:
        pass
    except PermissionError:
        alive.append(pid)
got["signalable"] = alive
for pid in alive:
    if pid not in (1, os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
print(json.dumps(got))
'''


class TemplateTests(Tests):
    def test_concurrent_runs_cannot_reach_each_other(self):
        with Server("--pool", "2", "--workers", "4") as srv:
            execute(srv, "print(1)")  # the template starts; the pool fills with forks of it
            deadline = time.time() + 60
            while srv.metrics()["execbox_pool_ready"] < 2 and time.time() < deadline:
                time.sleep(0.05)
            warm_before = srv.metrics()['execbox_pool_runs_total{sandbox="warm"}']
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                owner = pool.submit(execute, srv, OWNER)
                time.sleep(1.5)
                attacker = execute(srv, ATTACKER)
                mine = owner.result(timeout=60)
            got, made = out_json(attacker), out_json(mine)
            # the owner made them (POSIX queues may be refused to the guest outright)
            assert made["shm"] >= 0, made
            assert made["mq"] >= 0 or made["mq_errno"] in (1, 13, 38), made
            assert not got["abstract_connect"], got
            assert not got["proc_net_unix_sees_it"], got
            assert got["abstract_bind_free"], got
            assert not got["path_connect"], got
            assert not got["loopback_connect"], got
            assert got["files_seen"] == [], got
            assert not got["shm_found"] and not got["mq_found"], got
            assert got["proc_pids"] == [1, 2], got  # its init and itself: nobody else
            assert got["signalable"] == [1, 2], got
            assert made["connected_to_me"] == [] and made["files_intact"], made
            m = srv.metrics()
            assert m["execbox_templates"] >= 1, m
            # both were forks of the template, alive at the same time
            assert m['execbox_pool_runs_total{sandbox="warm"}'] == warm_before + 2, m
            assert srv.stop() == 0

    def test_forks_are_unique(self):
        # numpy's global state in the form its own seed() leaves (a cold start's): key[0]
        # 0x80000000, the rest its own, position 623, no cached gaussian; then the draws
        code = ("import json, random, uuid, numpy\n"
                "s = numpy.random.get_state()\n"
                "print(json.dumps([random.random(), float(numpy.random.rand()), "
                "str(uuid.uuid4()), hash('execbox'), s[1][1:].tobytes().hex(), s[0], "
                "int(s[1][0]), s[2], s[3], s[4], float(numpy.random.randn())]))")
        with Server("--pool", "4", "--preload", "numpy") as srv:
            rows = [out_json(execute(srv, code)) for _ in range(50)]
            m = srv.metrics()
            assert srv.stop() == 0
        for i, what in ((0, "random.random()"), (1, "numpy.random.rand()"), (2, "uuid4()"),
                        (4, "numpy's key"), (10, "numpy.random.randn()")):
            values = {r[i] for r in rows}
            assert len(values) == 50, f"{what}: {50 - len(values)} repeats"
        assert {tuple(r[5:10]) for r in rows} == {("MT19937", 0x80000000, 623, 0, 0.0)}, \
            [r[5:10] for r in rows]
        # one generation (1000 runs by default) shares the template's hash secret; a run that
        # found no fork ready went cold and has its own
        assert len({r[3] for r in rows}) <= (m["execbox_templates_started_total"] +
                                             m['execbox_pool_runs_total{sandbox="cold"}']), rows
        assert m['execbox_pool_runs_total{sandbox="warm"}'] >= 40, m

    def test_forks_do_not_share_openssl_random_state(self):
        """A preloaded module that builds an SSL context at import (requests >= 2.32 does) has
        OpenSSL's generator instantiated in the template: a fork that OpenSSL does not see as a
        fork (the same pid as the template's interpreter) goes on drawing from the template's
        state, and every sibling draws the same bytes and makes the same keys. The module comes
        from a directory bound over a dist-packages directory in a mount namespace of serve's own
        (the jail sees serve's view of /usr); nothing on the host changes."""
        site = "/usr/local/lib/python3.11/dist-packages"
        if not os.path.isdir(site) or not shutil.which("unshare"):
            raise SkipTest(f"no {site} or no unshare(1) to put a test module in its view")
        mod = tempfile.mkdtemp(prefix="execbox-tplmod-")
        os.chmod(mod, 0o755)  # the jail's user reads the module
        try:
            for name in os.listdir(site):  # what the directory holds stays in view
                if os.path.isfile(os.path.join(site, name)):
                    shutil.copy2(os.path.join(site, name), mod)
            with open(os.path.join(mod, "eb_ctx_at_import.py"), "w") as f:
                f.write("import ssl\nCONTEXT = ssl.create_default_context()\n")
            wrap = os.path.join(mod, "serve-in-ns.sh")
            with open(wrap, "w") as f:
                f.write("#!/bin/sh\nexec unshare --mount --propagation private sh -c "
                        f"'mount --bind {mod} {site} && exec \"$@\"' sh {serve.EXECBOX} \"$@\"\n")
            os.chmod(wrap, 0o755)
            code = ("import json, ssl\n"
                    "out = {'rand': ssl.RAND_bytes(16).hex(), 'ec': None}\n"
                    "try:\n"
                    "    from cryptography.hazmat.primitives.asymmetric import ec\n"
                    "    k = ec.generate_private_key(ec.SECP256R1())\n"
                    "    out['ec'] = k.private_numbers().private_value\n"
                    "except ImportError:\n"
                    "    pass\n"
                    "print(json.dumps(out))\n")
            saved, serve.EXECBOX = serve.EXECBOX, wrap
            try:
                with Server("--pool", "2", "--preload", "ssl,eb_ctx_at_import") as srv:
                    first = out_json(execute(srv, "import eb_ctx_at_import; print('{}')"))
                    assert first == {}, first
                    rows = [out_json(execute(srv, code)) for _ in range(10)]
                    m = srv.metrics()
                    assert srv.stop() == 0
            finally:
                serve.EXECBOX = saved
        finally:
            shutil.rmtree(mod, True)
        warm = m['execbox_pool_runs_total{sandbox="warm"}']
        assert warm >= 8, m
        rand = [r["rand"] for r in rows]
        print(f"  RAND_bytes(16): {len(set(rand))} distinct of 10 ({warm:.0f} warm runs)")
        assert len(set(rand)) == 10, f"ssl.RAND_bytes repeats across runs: {rand}"
        keys = [r["ec"] for r in rows if r["ec"] is not None]
        if keys:
            print(f"  EC private keys: {len(set(keys))} distinct of {len(keys)}")
            assert len(set(keys)) == len(keys), f"identical EC keys across runs: {keys}"
        else:
            print("  (no cryptography module: the EC key part is skipped)")

    def test_generation_is_replaced_after_its_bound(self):
        with Server("--pool", "1", "--template-runs", "4") as srv:
            hashes = []
            for _ in range(16):
                # each run from a fork the pool has ready (runs outpace a new generation's
                # start: back to back, half of them would run cold and fewer generations pass)
                deadline = time.time() + 60
                while srv.metrics()["execbox_pool_ready"] < 1 and time.time() < deadline:
                    time.sleep(0.02)
                hashes.append(out_json(execute(srv, "print(hash('execbox'))")))
            m = srv.metrics()
            assert srv.stop() == 0
        assert m["execbox_templates_started_total"] >= 3, m
        assert m["execbox_templates_retired_total"] >= 2, m
        assert len(set(hashes)) >= 3, hashes  # each generation has a secret of its own
        # no generation served more runs than its bound (the pool's ready fork counts too)
        runs = {}
        for h in hashes:
            runs[h] = runs.get(h, 0) + 1
        assert max(runs.values()) <= 4, runs

    def test_killed_template_still_answers(self):
        with Server("--pool", "2") as srv:
            assert execute(srv, "print(6*7)")["stdout"] == "42\n"
            # The template up and a fork of it ready (under load the first run may have gone
            # cold while the template was still importing: killing it then would only fail
            # its start, which is not what this test is about).
            deadline = time.time() + 60
            while time.time() < deadline:
                m = srv.metrics()
                if m["execbox_templates"] >= 1 and m["execbox_pool_ready"] >= 1:
                    break
                time.sleep(0.05)
            started = m["execbox_templates_started_total"]
            assert started >= 1, m
            victims = template_pids(srv.proc.pid)
            assert victims, "no template process found"
            for pid in victims:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            # A fork still alive when its template died may be cut short mid-run: a structured
            # SandboxError. One that died before it got its code runs cold instead. Either
            # way, within a few runs a new template serves again.
            results = [execute(srv, f"print({i}*7)", timeout=60) for i in range(8)]
            for i, res in enumerate(results):
                good = res["exit_code"] == 0 and res["stdout"] == f"{i * 7}\n"
                lost = res["exit_code"] == 1 and res["error"]["name"] == "SandboxError"
                assert good or (lost and i < 2), (i, res)
            deadline = time.time() + 60
            while time.time() < deadline:
                m = srv.metrics()
                if m["execbox_templates_started_total"] > started and m["execbox_pool_ready"] >= 1:
                    break
                time.sleep(0.1)
            assert m["execbox_templates_started_total"] > started, m  # a new one took over
            warm = m['execbox_pool_runs_total{sandbox="warm"}']
            assert execute(srv, "print(6*7)")["stdout"] == "42\n"
            assert srv.metrics()['execbox_pool_runs_total{sandbox="warm"}'] == warm + 1
            pid = srv.proc.pid
            assert srv.stop() == 0
        assert cgroups_of(pid) == [], cgroups_of(pid)

    def test_failing_fork_is_a_structured_result(self):
        # One process per run: the run's init fits, the guest's fork does not.
        with Server("--pool", "1", "--pids", "1") as srv:
            res = execute(srv, "print(1)", timeout=60)
            assert res["exit_code"] != 0 and res["error"]["name"] == "SandboxError", res
            pid = srv.proc.pid
            assert srv.stop() == 0
        assert cgroups_of(pid) == [], cgroups_of(pid)
        assert not template_pids(pid)

    def test_cgroup_that_cannot_be_made(self):
        """While the host refuses execbox's cgroups (an LD_PRELOAD shim fails their mkdir and
        the reset of a kept one's peak), a run whose fork cannot get its cgroup runs cold, which cannot get one either: a
        structured SandboxError, at once, never a hang; once the host allows them again runs
        are forks again, and nothing is left behind after the server stops."""
        shim = os.environ.get("EB_FAIL_CGROUP")
        if not shim:
            print("     (EB_FAIL_CGROUP not set: run through ctest)")
            return
        flag = tempfile.mktemp(prefix="eb-cgfail-")
        asan = os.environ.get("ASAN_OPTIONS", "")
        env = {"LD_PRELOAD": shim, "EB_TEST_CGROUP_FAIL": flag,
               "ASAN_OPTIONS": (asan + ":" if asan else "") + "verify_asan_link_order=0"}
        try:
            with Server("--pool", "1", env=env) as srv:
                assert execute(srv, "print(6*7)")["stdout"] == "42\n"
                deadline = time.time() + 60
                while srv.metrics()["execbox_pool_ready"] < 1 and time.time() < deadline:
                    time.sleep(0.05)
                # The ready fork has its cgroup already, and the emptied cgroups kept for reuse
                # may serve a few more, while the pool refills from them in the background: such
                # runs succeed, in any order with the failures. None is kept from now on (its
                # reset is refused), so each serves once and they run out (at most
                # EB_CG_SPARES_MAX, 32, and a pool of one): then three runs in a row fail, each
                # with a structured SandboxError, at once.
                open(flag, "w").close()
                assert execute(srv, "print(1)")["stdout"] == "1\n"
                fails = 0
                for _ in range(48):
                    t = time.time()
                    res = execute(srv, "print(2)", timeout=60)
                    assert time.time() - t < 10, "a failed cgroup must not stall the run"
                    if res["exit_code"] == 0:
                        assert res["stdout"] == "2\n", res
                        fails = 0
                        continue
                    assert res["exit_code"] == 1 and res["error"]["name"] == "SandboxError", res
                    assert "cgroup" in res["error"]["value"], res
                    fails += 1
                    if fails == 3:
                        break
                assert fails == 3, "runs still get a cgroup while the host refuses them"
                os.unlink(flag)
                deadline = time.time() + 60
                while time.time() < deadline:
                    res = execute(srv, "print(3)")
                    if res["exit_code"] == 0:
                        break
                    time.sleep(0.2)
                assert res["stdout"] == "3\n", res
                pid = srv.proc.pid
                assert srv.stop() == 0
            assert cgroups_of(pid) == [], cgroups_of(pid)
            assert not template_pids(pid)
        finally:
            if os.path.exists(flag):
                os.unlink(flag)

    def test_cgroups_reused_with_limits_and_counters_reset(self):
        """An emptied run's cgroup is kept and given to a later run (cgroup v1, and v2 from
        Linux 6.12, whose memory.peak can be reset) with its limits rewritten and its counters
        reset: a lower limit holds and a higher one allows again, a run after an OOM kill
        reports none, and each run reports its own peak and CPU, not the last run's. On v2
        before 6.12 nothing is kept and the same holds."""
        big = "b = b'x' * (300 << 20)\nprint(len(b) >> 20)"
        mid = "b = b'x' * (150 << 20)\nprint(1)"
        burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.0: pass"
        with Server("--pool", "1", "--memory", "512M") as srv:
            for _ in range(3):
                r = execute(srv, big, timeout=120)
                assert r["exit_code"] == 0 and r["stdout"] == "300\n", r
                assert r["peak_memory_bytes"] >= 300 << 20, r
                r = execute(srv, mid, memory="100M", timeout=120)
                assert r["oom_killed"] is True and r["exit_code"] == 137, r
                r = execute(srv, burn, timeout=120)
                assert r["exit_code"] == 0 and r["cpu_time"] >= 0.9, r
                r = execute(srv, "print(1)")
                assert r["exit_code"] == 0 and r["oom_killed"] is False, r
                assert r["peak_memory_bytes"] < 64 << 20, r
                assert r["cpu_time"] < 0.5, r
            reused = srv.metrics().get("execbox_cgroups_reused_total", 0)
            pid = srv.proc.pid
            assert srv.stop() == 0
        if reuse_expected():
            assert reused >= 4, reused
        else:
            assert reused == 0, reused
        assert cgroups_of(pid) == [], cgroups_of(pid)

    def test_check_reports_template_memory(self):
        """`execbox check --preload` starts the template as serve would and says what it holds
        once and what a run forked from it holds of its own: a template importing numpy holds
        more than one importing nothing, and each run's own share is far below it."""
        def figures(preload):
            p = run(["check", "--preload", preload])
            assert p.returncode == 0, (p.stdout, p.stderr)
            m = re.search(r"holds ([0-9.]+) MiB once", p.stdout)
            f = re.search(r"a run forked from it: exit 0 in [0-9.]+ ms, ([0-9.]+) MiB", p.stdout)
            assert m and f, p.stdout
            return float(m.group(1)), float(f.group(1))
        small, _ = figures("json")
        big, fork = figures("numpy")
        assert 0 < small < big, (small, big)
        assert 0 < fork < big / 2, (fork, big)

    def test_warm_output_is_cold_output(self):
        cases = [
            "print('hi'); import sys; print(sys.argv, __file__, __name__, sys.path[0])",
            "import os, socket; print(os.getpid(), os.getppid(), os.getuid(), os.getcwd(), "
            "socket.gethostname(), sorted(os.environ))",
            "raise ValueError('boom')",
            "import sys; sys.exit(3)",
            "def f(:\n  pass",
            "import sys; print(sys.stdin.read().upper())",
            "import os; print(sorted(os.listdir('/tmp')), sorted(os.listdir('/workspace')))",
            "import signal, os; os.kill(os.getpid(), signal.SIGTERM)",
        ]
        for code in cases:
            cold = run(["run", "--json", "-i", "-c", code], input="stdin text")
            warm = run(["run", "--warm", "--json", "-i", "-c", code], input="stdin text")
            a, b = json.loads(cold.stdout), json.loads(warm.stdout)
            for k in ("stdout", "stderr", "exit_code", "signal", "error"):
                assert a[k] == b[k], (code, k, a[k], b[k])
            assert cold.returncode == warm.returncode, (code, cold.returncode, warm.returncode)
        # Programs no -c can carry: a NUL byte, bytes that are not UTF-8, a coding cookie.
        files = [b"print(1)\nprint(2)\x00print(3)\n", b"print('\xff')\n",
                 b"# -*- coding: latin-1 -*-\nprint('\xe9')\n"]
        for data in files:
            with tempfile.NamedTemporaryFile(suffix=".py") as f:
                f.write(data)
                f.flush()
                a = json.loads(run(["run", "--json", f.name]).stdout)
                b = json.loads(run(["run", "--warm", "--json", f.name]).stdout)
            for k in ("stdout", "stderr", "exit_code", "error"):
                assert a[k] == b[k], (data, k, a[k], b[k])


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skip: templates need root (the jail's warm runs are root-only)")
        sys.exit(SKIP)
    chk = run(["check"])
    if chk.returncode != 0:
        print(f"skip: the jail is not usable here: {chk.stdout}{chk.stderr}")
        sys.exit(SKIP)
    os.environ.pop("EXECBOX_TEST_WARM", None)
    TemplateTests().main()
