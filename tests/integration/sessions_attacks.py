# SPDX-License-Identifier: MIT
"""Attacks of a session cell (and of a plain template run) on the supervisor that runs it,
through `execbox serve` on loopback and the real jail (root). Each runs for real:
- a cell queues an extra {"t": "started"} on the session's control socket and exits; a host
  process is then placed on its pid number (ns_last_pid) and the next cell times out: the host
  process keeps its oom_score_adj and is alive (with the kernel's SCM_PIDFD, and with the
  fallback that verifies a pid's cgroup and pid namespace, forced by EXECBOX_TEST_NO_SCM_PIDFD);
- a streaming cell writes an EB_MSG_DONE record into every pipe it can write and floods stdout
  from eight processes: the request ends at its deadline (timed_out), a hang-up frees it, and the
  only worker serves the next request; the same attack from a plain template run;
- a cell stops the state it was forked from and succeeds: that old state is killed (it does not
  linger, stopped, holding the memory the new state gave up)."""
import ctypes
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import SKIP, SOURCE, SkipTest, Tests, run  # noqa: E402
from serve import JSON, Server, sse_events  # noqa: E402
from sessions import Client  # noqa: E402


def field_max():
    with open(os.path.join(SOURCE, "include", "execbox", "execbox.h")) as f:
        for line in f:
            if line.startswith("#define EXECBOX_ERROR_FIELD_MAX"):
                return int(line.split()[2])
    raise AssertionError("EXECBOX_ERROR_FIELD_MAX not found")


class _Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 256), ("kind", ctypes.c_int),
                ("field", ctypes.c_char * field_max())]


class _Msg(ctypes.Structure):  # struct eb_msg (lib/proc/proc.h)
    _fields_ = [("type", ctypes.c_int), ("status", ctypes.c_int), ("utime", ctypes.c_int64),
                ("stime", ctypes.c_int64), ("maxrss", ctypes.c_int64), ("err", _Err)]


MSG_SIZE = ctypes.sizeof(_Msg)

# Queues a "started" on every SOCK_SEQPACKET socket the cell's process holds (the session's
# control socket among them; found by its fds, not by the bootstrap's frames), names itself for
# the test to find its host pid, and exits once the test has seen it.
STALE_STARTED = r'''
import ctypes, os, socket, time
ctypes.CDLL(None).prctl(15, b'ebstalecell', 0, 0, 0)  # PR_SET_NAME
sent = 0
for name in os.listdir('/proc/self/fd'):
    try:
        s = socket.socket(fileno=os.dup(int(name)))
    except OSError:
        continue
    try:
        if s.family == socket.AF_UNIX and s.type == socket.SOCK_SEQPACKET:
            s.send(b'{"t": "started"}')
            sent += 1
    except OSError:
        pass
    finally:
        s.close()
print('sent', sent, flush=True)
time.sleep(2)
os._exit(3)
'''

# Floods stdout from seven children, then writes an EB_MSG_DONE record (status 0) into every pipe
# it may write but its stdout and stderr (a session cell's status pipe) while the flood runs,
# and floods too.
DONE_FLOOD = r'''
import fcntl, os, stat, struct, sys, time
try:
    fcntl.fcntl(1, 1031, 1 << 20)  # F_SETPIPE_SZ: the reader never finds the pipe empty
except OSError:
    pass
buf = b'\xff\x00"' * 21845  # each byte costs the server's JSON events work
for _ in range(7):
    if os.fork() == 0:
        while True:
            os.write(1, buf)
time.sleep(0.5)
rec = struct.pack('=ii', ord('D'), 0).ljust(%d, b'\0')
hit = []
for name in os.listdir('/proc/self/fd'):
    fd = int(name)
    if fd in (1, 2):
        continue
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode) and \
                fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
            os.write(fd, rec)
            hit.append(fd)
    except OSError:
        pass
print('done records written to', hit, file=sys.stderr, flush=True)
while True:
    os.write(1, buf)
''' % MSG_SIZE


def host_pid_named(comm, deadline):
    while time.time() < deadline:
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/comm") as f:
                        if f.read().strip() == comm:
                            return int(d)
                except OSError:
                    pass
        time.sleep(0.02)
    raise AssertionError(f"no process named {comm} appeared")


def spawn_on_pid(pid):
    """A host `sleep 600` with exactly this pid (ns_last_pid), or SkipTest."""
    for _ in range(300):
        if os.path.exists(f"/proc/{pid}"):
            raise SkipTest(f"pid {pid} was taken by another process meanwhile")
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(pid - 1))
        except OSError as e:
            raise SkipTest(f"cannot write ns_last_pid: {e}")
        p = subprocess.Popen(["sleep", "600"])
        if p.pid == pid:
            return p
        p.kill()
        p.wait()
    raise SkipTest(f"could not place a process on pid {pid}")


def oom_adj(pid):
    with open(f"/proc/{pid}/oom_score_adj") as f:
        return int(f.read())


def stream(s, path, body, hang_up_after=None, limit=25):
    """POSTs body with Accept: text/event-stream and reads every event, slowly (the server's
    writes to us then hold up its reading of the run's output, and the pipes stay full): (seconds
    until the result, the result) or (seconds, None) when none came within limit (or after a
    hang-up)."""
    t0 = time.time()
    conn = s.conn(timeout=limit)
    conn.request("POST", path, body=json.dumps(body),
                 headers={"Accept": "text/event-stream", "Content-Type": JSON})
    resp = conn.getresponse()
    assert resp.status == 200, resp.status
    try:
        for ev, data in sse_events(resp):
            if ev == "result":
                return time.time() - t0, json.loads(data)
            if hang_up_after is not None and time.time() - t0 > hang_up_after:
                break
            if time.time() - t0 > limit:
                break
            time.sleep(0.002)
    except OSError:
        pass
    finally:
        conn.close()
    return time.time() - t0, None


def brief(r):
    """A result without its flood of output."""
    return r and {k: (v[:100] if isinstance(v, str) else v) for k, v in r.items()}


def served_within(s, seconds):
    """Whether the server answers a plain run within seconds (its worker is free)."""
    try:
        st, _, r = s.execute({"code": "print(6 * 7)"}, headers={"Content-Type": JSON},
                              timeout=seconds)
    except OSError:
        return False
    return st == 200 and r.get("stdout") == "42\n"


class SessionAttackTests(Tests):
    CHECK_TEMP_LEFTOVERS = True

    def stale_started(self, env):
        with Server("--workers", "2", "--timeout", "10", env=env) as s:
            c = Client(s)
            sid = c.create()["id"]
            c.ok(sid, "x = 1")
            out = {}
            t = threading.Thread(target=lambda: out.update(r=c.cell(sid, STALE_STARTED)))
            t.start()
            pid = host_pid_named("ebstalecell", time.time() + 20)
            t.join(60)
            st, r = out["r"]
            assert st == 200 and r["exit_code"] == 3 and "sent" in r["stdout"], r
            deadline = time.time() + 10
            while os.path.exists(f"/proc/{pid}") and time.time() < deadline:
                time.sleep(0.01)
            victim = spawn_on_pid(pid)
            try:
                before = oom_adj(pid)
                st, r = c.cell(sid, "import time\ntime.sleep(30)", timeout=2)
                time.sleep(0.5)
                alive = victim.poll() is None
                after = oom_adj(pid) if alive else None
                print(f"  victim pid {pid}: oom_score_adj {before} -> {after}, alive {alive}; "
                      f"next cell: {st} timed_out={r.get('timed_out')} "
                      f"error={r.get('error')}", flush=True)
                assert alive, "the host process on the stale pid was killed"
                assert after == before, (before, after)
                assert st == 200 and r["timed_out"] and r["rolled_back"], r
                # The stale message was ignored: the session goes on as before.
                assert c.value(sid, "x") == "1"
            finally:
                victim.kill()
                victim.wait()
            assert s.stop() == 0

    def test_stale_started_cannot_aim_at_a_host_pid_scm_pidfd(self):
        self.stale_started(None)

    def test_stale_started_cannot_aim_at_a_host_pid_fallback(self):
        self.stale_started({"EXECBOX_TEST_NO_SCM_PIDFD": "1"})

    def test_a_stopped_old_state_does_not_linger(self):
        # A cell stops the state it was forked from (so it never hears it is replaced) and
        # succeeds: the library kills that old state, which gives back what it held.
        MiB = 1 << 20
        with Server("--workers", "1", "--memory", "512M") as s:
            c = Client(s)
            sid = c.create(memory="256M", tmpfs="4M", workspace_size="4M")["id"]
            c.ok(sid, "b = b'x' * (150 << 20)")
            st, r = c.cell(sid, "import os, signal\nold = os.getppid()\n"
                           "os.kill(old, signal.SIGSTOP)\ndel b\nprint(old)")
            assert st == 200 and r["exit_code"] == 0 and not r["rolled_back"], brief(r)
            old = int(r["stdout"])
            st, i = c.info(sid)
            st, r = c.cell(sid, f"import os, time\nt = time.monotonic() + 10\n"
                           f"while os.path.exists('/proc/{old}') and time.monotonic() < t:\n"
                           f"    time.sleep(0.01)\nprint(os.path.exists('/proc/{old}'))")
            print(f"  old state (pid {old} in the sandbox) stopped by the cell: memory after "
                  f"{i['memory_bytes'] // MiB} MiB, still there: {r['stdout'].strip()}",
                  flush=True)
            assert i["memory_bytes"] < 100 * MiB, i
            assert st == 200 and r["stdout"] == "False\n", brief(r)
            assert c.value(sid, "'b' in globals()") == "False"
            assert s.stop() == 0

    def test_done_record_and_flood_cannot_pin_a_worker(self):
        with Server("--workers", "1", "--timeout", "10") as s:
            c = Client(s)
            sid = c.create()["id"]
            took, r = stream(s, f"/v1/sessions/{sid}/execute", {"code": DONE_FLOOD, "timeout": 2})
            print(f"  streaming cell, timeout 2: ended after {took:.1f} s: "
                  f"{r and {k: r[k] for k in ('timed_out', 'exit_code', 'rolled_back')} }",
                  flush=True)
            assert r is not None and took < 8, (took, brief(r))
            assert r["timed_out"] and r["rolled_back"], brief(r)
            assert "done records written to [" in r["stderr"], brief(r)
            assert served_within(s, 10), "the only worker is still taken"
            # A hang-up frees the worker as well.
            sid = c.create()["id"]
            took, r = stream(s, f"/v1/sessions/{sid}/execute", {"code": DONE_FLOOD},
                             hang_up_after=1)
            t0 = time.time()
            ok = served_within(s, 10)
            print(f"  after a hang-up at {took:.1f} s: next request served {ok} in "
                  f"{time.time() - t0:.1f} s", flush=True)
            assert ok, "a hang-up did not free the worker"
            assert s.stop() == 0

    def test_done_record_and_flood_from_a_template_run(self):
        with Server("--workers", "1", "--timeout", "10", "--pool", "1") as s:
            took, r = stream(s, "/v1/execute", {"code": DONE_FLOOD, "timeout": 2})
            print(f"  template run, timeout 2: ended after {took:.1f} s: "
                  f"{r and {k: r[k] for k in ('timed_out', 'exit_code')} }; "
                  f"{r and r['stderr'][:60]!r}", flush=True)
            assert r is not None and took < 8, (took, brief(r))
            assert r["timed_out"], brief(r)
            # The guest holds no copy of the run's status pipe.
            assert "done records written to []" in r["stderr"], brief(r)
            assert served_within(s, 10), "the only worker is still taken"
            assert s.stop() == 0


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skip: sessions need the jail as root")
        sys.exit(SKIP)
    chk = run(["check"])
    if chk.returncode != 0:
        print(f"skip: the jail is not usable here: {chk.stdout}{chk.stderr}")
        sys.exit(SKIP)
    SessionAttackTests().main()
