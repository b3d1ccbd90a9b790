# SPDX-License-Identifier: MIT
"""Each jail sandbox has a host uid of its own (root mode; lib/jail/uidpool.h): per-user kernel
counts are not shared. The attack for real: a session cell holds as many inotify instances as
fs.inotify.max_user_instances allows (130 asked), and another cold run, another session and a
warm run still get one (before, all were nobody outside and got EMFILE); and within one server,
where sessions and pooled runs are forks of one template, a session holding all it can takes
only its share and its siblings still get theirs. Two concurrent
sandboxes have different host uids in execbox's range (read from /proc/<pid>/status on the
host); a slot is unlocked once its run ends and after its owner is SIGKILLed; a host workspace's
new files still belong to the directory's owner; a range overlapping a real user is refused."""
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import EXECBOX, SKIP, Tests  # noqa: E402
from serve import Server  # noqa: E402
from sessions import Client  # noqa: E402

BASE, COUNT = 0x7e000000, 65536
LOCK = "/run/execbox/uids.lock"
HOLD = ("import ctypes, time\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "fds = []\n"
        "for _ in range(130):\n"
        "    fd = libc.inotify_init1(0)\n"
        "    if fd < 0: break\n"
        "    fds.append(fd)\n"
        "print(len(fds), flush=True)\n"
        "time.sleep(%d)\n")
PROBE = ("import ctypes, os\n"
         "libc = ctypes.CDLL(None, use_errno=True)\n"
         "fd = libc.inotify_init1(0)\n"
         "print('ok' if fd >= 0 else 'errno %d' % ctypes.get_errno())\n")


def ex(*args, **kw):
    return subprocess.run([EXECBOX, *args], capture_output=True, text=True, timeout=120, **kw)


def descendants(pid):
    kids, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    for c in f.read().split():
                        kids.append(int(c))
                        todo.append(int(c))
        except OSError:
            pass
    return kids


def host_uids(pid):
    """The real uids of pid's descendants other than root's."""
    out = set()
    for k in descendants(pid):
        try:
            with open(f"/proc/{k}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        u = int(line.split()[1])
                        if u:
                            out.add(u)
        except OSError:
            pass
    return out


def inotify_count(pid):
    n = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify":
                    n += 1
            except OSError:
                pass
    except OSError:
        pass
    return n


def wait_for(cond, what, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out: {what}")


def locked_slots():
    """The slots (bytes of the lock file) someone holds, from /proc/locks."""
    try:
        st = os.stat(LOCK)
    except FileNotFoundError:
        return set()
    ino = f":{st.st_ino}"
    out = set()
    with open("/proc/locks") as f:
        for line in f:
            p = line.split()
            if "OFDLCK" in p and any(x.endswith(ino) and x.count(":") == 2 for x in p):
                out.add(int(p[-2]))
    return out


def fork_share():
    """What one fork of a template may hold: 1/8 of the host's per-user inotify instances."""
    with open("/proc/sys/fs/inotify/max_user_instances") as f:
        return int(f.read()) // 8


def self_rlimit_share(name):
    """A template fork's share of one of this process's per-user rlimits (the server inherits
    them): 1/8 of the soft limit."""
    return resource.getrlimit(getattr(resource, name))[0] // 8


def hold(seconds, *extra, at_least=100):
    """A sandbox holding inotify instances, at least at_least of them (a cold sandbox gets nearly
    all of the host's per-user 128; a session, a fork of a template, exactly its share);
    returns (process, its host uid)."""
    p = subprocess.Popen([EXECBOX, "run", "-b", "jail", *extra, "-c", HOLD % seconds],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    uids = wait_for(lambda: [u for u in host_uids(p.pid)
                             if any(inotify_count(k) >= at_least for k in descendants(p.pid))],
                    "the holder holds its inotify instances")
    return p, uids[0]


def uid_alive(u):
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/status") as f:
                    if any(ln.startswith("Uid:") and int(ln.split()[1]) == u for ln in f):
                        return True
            except OSError:
                pass
    return False


def end(p):
    """Ends p; its stdout."""
    if p.poll() is None:
        p.kill()
    return p.communicate(timeout=60)[0]


class UidTests(Tests):
    def test_inotify_instances_not_shared(self):
        # A cold run holds nearly every instance its own uid may; a session cell (a fork of its
        # executor's template) holds its share. Neither leaves another sandbox without one.
        for kind, extra, at_least in (("cold run", [], 100), ("session", ["--rich"], fork_share())):
            holder, uid = hold(20, *extra, at_least=at_least)
            try:
                for what, args in (("cold run", []), ("session", ["--rich"]),
                                   ("warm run", ["--warm"])):
                    r = ex("run", "-b", "jail", *args, "-c", PROBE)
                    print(f"  {what} while a {kind} holds its instances: {r.stdout.strip()}")
                    assert r.returncode == 0 and r.stdout.strip() == "ok", (what, r.stdout,
                                                                            r.stderr)
            finally:
                out = end(holder)
            if kind == "session":
                assert out.split()[0] == str(at_least), (out, at_least)

    def test_forks_of_one_template_take_only_their_share(self):
        share = fork_share()
        hold_cell = HOLD.replace("time.sleep(%d)\n", "")
        with Server("--pool", "2") as srv:
            c = Client(srv)
            a, b, d = c.create()["id"], c.create()["id"], c.create()["id"]
            # Two sessions (forks of the server's template) each hold every instance they can.
            for sid in (a, b):
                got = int(c.ok(sid, hold_cell)["stdout"])
                print(f"  a session holding inotify instances got {got} (share {share})")
                assert got == share, (got, share)
            # A third session and pooled one-shot runs, forks of the same template, still get one.
            assert c.ok(d, PROBE)["stdout"].strip() == "ok"
            for _ in range(3):
                st, r = c.jreq("POST", "/v1/execute", {"code": PROBE})
                assert st == 200 and r["stdout"].strip() == "ok", (st, r)
            m = srv.metrics()
            assert m['execbox_pool_runs_total{sandbox="warm"}'] >= 1, m
            assert m["execbox_sessions_open"] == 3 and m["execbox_templates"] >= 1, m

    def test_forks_of_one_template_share_pending_signals_fairly(self):
        # RLIMIT_SIGPENDING counts per user: a fork queueing every real-time signal it can (to
        # itself, blocked, so they stay pending in the session's state) takes only its share.
        share = self_rlimit_share("RLIMIT_SIGPENDING")
        fill = ("import ctypes, signal, os\n"
                "libc = ctypes.CDLL(None, use_errno=True)\n"
                "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGRTMIN})\n"
                "n = 0\n"
                "while libc.sigqueue(os.getpid(), int(signal.SIGRTMIN), 0) == 0: n += 1\n"
                "print(n, ctypes.get_errno())\n")
        probe = ("import ctypes, signal, os\n"
                 "libc = ctypes.CDLL(None, use_errno=True)\n"
                 "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGRTMIN})\n"
                 "r = libc.sigqueue(os.getpid(), int(signal.SIGRTMIN), 0)\n"
                 "print('ok' if r == 0 else 'errno %d' % ctypes.get_errno())\n")
        with Server("--pool", "2") as srv:
            c = Client(srv)
            a, b = c.create()["id"], c.create()["id"]
            got, err = c.ok(a, fill)["stdout"].split()
            print(f"  a session queued {got} signals (share {share}), then errno {err}")
            assert int(got) == share and int(err) == 11, (got, err, share)  # EAGAIN
            assert c.ok(b, probe)["stdout"].strip() == "ok"
            st, r = c.jreq("POST", "/v1/execute", {"code": probe})
            assert st == 200 and r["stdout"].strip() == "ok", (st, r)

    def test_concurrent_sandboxes_have_their_own_uids_freed_after(self):
        a, ua = hold(15)
        b, ub = hold(15, "--rich", at_least=fork_share())
        try:
            print(f"  host uids: {ua:#x} {ub:#x}")
            assert ua != ub, (ua, ub)
            for u in (ua, ub):
                assert BASE <= u < BASE + COUNT, hex(u)
            assert {ua - BASE, ub - BASE} <= locked_slots(), (locked_slots(), ua, ub)
        finally:
            end(a)
            end(b)
        wait_for(lambda: not ({ua - BASE, ub - BASE} & locked_slots()), "slots unlocked")

    def test_sigkilled_owner_frees_its_slot(self):
        p, u = hold(60)
        assert u - BASE in locked_slots()
        os.kill(p.pid, signal.SIGKILL)
        p.communicate(timeout=30)
        wait_for(lambda: u - BASE not in locked_slots(), "the dead owner's slot unlocked")
        wait_for(lambda: not uid_alive(u), "its processes gone")

    def test_host_workspace_files_keep_the_owner(self):
        ws = tempfile.mkdtemp(prefix="eb-uidws-")
        try:
            os.chown(ws, 4242, 4343)
            r = ex("run", "-b", "jail", "-w", ws, "-c",
                   "import os; open('made.txt','w').write('x'); print(os.getuid())")
            assert r.returncode == 0, r.stderr
            st = os.stat(os.path.join(ws, "made.txt"))
            assert (st.st_uid, st.st_gid) == (4242, 4343), (st.st_uid, st.st_gid)
        finally:
            for n in os.listdir(ws):
                os.unlink(os.path.join(ws, n))
            os.rmdir(ws)

    def test_a_range_overlapping_a_user_is_refused(self):
        r = ex("run", "-b", "jail", "-c", "print(1)", env=dict(os.environ, EXECBOX_JAIL_UIDS="0:10"))
        assert r.returncode != 0 and "range" in r.stderr, (r.returncode, r.stderr)
        r = ex("run", "-b", "jail", "-c", "print(1)",
               env=dict(os.environ, EXECBOX_JAIL_UIDS="65000:1000"))
        assert r.returncode != 0 and "nobody" in r.stderr, (r.returncode, r.stderr)


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skip: the jail's own uids are a root-mode wall")
        sys.exit(SKIP)
    UidTests().main()
