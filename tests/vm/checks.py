#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The VM lane's checks, run inside one VM boot (tests/vm/run.sh) as root: each named check
drives the built execbox ($EXECBOX) as a user would, in whatever cgroup v2 placement the
layout gave this process, and prints `ok NAME (S s)` or `FAIL NAME: why (S s)`; the last line
is `N passed, N failed`. Exit 0 when all passed, 1 otherwise.

    checks.py [--walls] [NAME...]     (no NAME: every check; --walls adds the jail walls suite)
"""
import http.client
import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

SRC = os.environ.get("EXECBOX_SOURCE") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
EXE = os.environ.get("EXECBOX") or os.path.join(SRC, "build", "execbox")
# Every command under TCG is 10-30x slower than on the host: generous but bounded waits.
CMD_TIMEOUT = 240
RUN_T = "120"  # the sandbox's own timeout for a run


class Fail(Exception):
    pass


def sh(args, timeout=CMD_TIMEOUT, **kw):
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        raise Fail(f"{' '.join(args[:4])}... did not end within {timeout}s "
                   f"(stderr: {(e.stderr or b'')[-300:]!r})")


def tail(s, n=400):
    s = (s or "").strip()
    return s[-n:].replace("\n", " | ")


def run_json(*args):
    p = sh([EXE, "run", "--json", "-t", RUN_T, *args])
    try:
        return json.loads(p.stdout), p
    except ValueError:
        raise Fail(f"no JSON result (exit {p.returncode}): stdout {tail(p.stdout)!r} "
                   f"stderr {tail(p.stderr)!r}")


# How `execbox check` must say it placed runs' cgroups, per layout (guest.sh's LANE_LAYOUT).
PLACEMENT = {
    "root": "the root cgroup",
    "service": "delegated by systemd",
    "scope": "made at the top",
    "container": "the root of this cgroup namespace",
    "systemd-service": "delegated by systemd",
    "systemd-nodelegate": "a scope systemd made",
    "systemd-scope": "a scope systemd made",
}


def check_check():
    p = sh([EXE, "check"])
    if "status: ready" not in p.stdout:
        # The rows that are not `ok`, and the tier: what the check found missing.
        bad = [ln.strip() for ln in p.stdout.splitlines()
               if ln.strip() and not ln.strip().startswith("ok ")]
        raise Fail(f"not ready (exit {p.returncode}): {' | '.join(bad)[-600:]} "
                   f"{tail(p.stderr, 200)}")
    want = PLACEMENT.get(os.environ.get("LANE_LAYOUT", ""))
    row = [ln.strip() for ln in p.stdout.splitlines() if "cgroup placement" in ln]
    if want and (not row or want not in row[0] or not row[0].startswith("ok ")):
        raise Fail(f"placement: want {want!r}, got {row[:1]!r}")


def check_churn():
    p = sh([EXE, "run", "-t", RUN_T, os.path.join(SRC, "examples", "churn.py")])
    if p.returncode != 0 or "mean monthly churn" not in p.stdout:
        raise Fail(f"exit {p.returncode}: {tail(p.stderr)}")


# bytearray(n) alone is calloc'd, untouched pages the kernel never charges: the bytes are
# written here, so 400 MiB really is asked of a 100 MiB limit.
BOMB = "b = b'x' * (400 * 2**20)"


def want_memory_limit(r, what):
    err = (r.get("error") or {}).get("name")
    if err != "MemoryLimit" or r.get("oom_killed") is not True:
        raise Fail(f"{what}: error {err!r}, oom_killed {r.get('oom_killed')!r}, exit_code "
                   f"{r.get('exit_code')}, value {(r.get('error') or {}).get('value', '')[:200]!r}"
                   f" stderr {tail(r.get('stderr'), 200)!r}")


def check_memory_limit():
    r, _ = run_json("-m", "100M", "-c", BOMB)
    want_memory_limit(r, "cold run")
    # A template run (a fork of the warm interpreter) under the same cap.
    r, p = run_json("--warm", "-m", "100M", "-c", BOMB)
    want_memory_limit(r, "warm run")
    if "ran cold" in p.stderr:
        raise Fail(f"the warm memory bomb ran cold: {tail(p.stderr)}")


def check_warm():
    r, p = run_json("--warm", "-c", "print(1)")
    if r.get("stdout") != "1\n" or r.get("exit_code") != 0:
        raise Fail(f"exit {r.get('exit_code')}, stdout {r.get('stdout')!r}, error "
                   f"{r.get('error')!r}")
    if "ran cold" in p.stderr:
        raise Fail(f"ran cold: {tail(p.stderr)}")


def workspace_keeps_owner(ws, where):
    # A host directory as /workspace (root: an id-mapped mount): what the code writes is owned
    # by the directory's owner.
    r, _ = run_json("-w", ws, "-c", WS_CODE)
    if r.get("exit_code") != 0:
        raise Fail(f"{where}: exit {r.get('exit_code')}: {r.get('error')!r} "
                   f"{tail(r.get('stderr'))}")
    st = os.stat(os.path.join(ws, "f"))
    if (st.st_uid, st.st_gid) != (1234, 1234):
        raise Fail(f"{where}: the file the code wrote is owned by {st.st_uid}:{st.st_gid}, "
                   f"not the workspace's owner 1234:1234")


WS_CODE = "open('/workspace/f', 'w').write('x')"


def check_host_workspace():
    # On ext4 (the VM's /tmp, as on a Debian host) on every kernel; on tmpfs, which takes
    # id-mapped mounts from Linux 6.3 only: before that the run is refused and says why.
    ext4 = "/tmp/execbox-vm-ws"
    tmpfs = "/run/execbox-vm-tmpfs"
    os.makedirs(ext4, exist_ok=True)
    os.chown(ext4, 1234, 1234)
    os.makedirs(tmpfs, exist_ok=True)
    try:
        workspace_keeps_owner(ext4, "ext4")
        p = sh(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0755", "tmpfs", tmpfs])
        if p.returncode != 0:
            raise Fail(f"mount of a tmpfs for the workspace failed: {tail(p.stderr)}")
        os.chown(tmpfs, 1234, 1234)
        rel = tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2])
        if rel < (6, 3):
            p = sh([EXE, "run", "-t", RUN_T, "-w", tmpfs, "-c", WS_CODE])
            if p.returncode != 125 or "Linux 6.3" not in p.stderr:
                raise Fail(f"on {os.uname().release} a tmpfs workspace should be refused with "
                           f"the reason: exit {p.returncode} {tail(p.stderr)}")
        else:
            workspace_keeps_owner(tmpfs, "tmpfs")
    finally:
        subprocess.run(["rm", "-rf", ext4])
        subprocess.run(["umount", tmpfs], stderr=subprocess.DEVNULL)
        subprocess.run(["rmdir", tmpfs], stderr=subprocess.DEVNULL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Serve:
    """`execbox serve` on a loopback port, stopped by SIGTERM."""

    def __init__(self, *extra):
        self.port = free_port()
        self.proc = subprocess.Popen([EXE, "serve", "--listen", f"127.0.0.1:{self.port}",
                                      "--workers", "2", "--timeout", RUN_T, *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Fail(f"serve exited {self.proc.returncode}: {tail(self.proc.stderr.read())}")
            try:
                st, _ = self.req("GET", "/v1/health")
                if st == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        raise Fail("serve did not answer /v1/health within 120 s")

    def req(self, method, path, body=None, ctype="application/json", timeout=CMD_TIMEOUT):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        headers = {}
        if body is not None:
            if not isinstance(body, bytes):
                body = json.dumps(body).encode()
            headers["Content-Type"] = ctype
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def jreq(self, method, path, body=None, want=200):
        st, data = self.req(method, path, body)
        if st != want:
            raise Fail(f"{method} {path}: {st} {data[:300]!r}")
        return json.loads(data) if data else None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise Fail("serve did not exit within 120 s of SIGTERM")
        return self.proc.returncode


def check_session():
    s = Serve()
    try:
        sess = s.jreq("POST", "/v1/sessions", {"memory": "100M"}, want=201)
        sid = sess["id"]
        base = f"/v1/sessions/{sid}"
        r = s.jreq("POST", base + "/execute", {"code": "x = 41"})
        if r.get("exit_code") != 0 or r.get("rolled_back"):
            raise Fail(f"first cell: exit {r.get('exit_code')} error {r.get('error')!r} "
                       f"stderr {tail(r.get('stderr'), 200)!r}")
        r = s.jreq("POST", base + "/execute", {"code": "x += 1\n1 / 0"})
        if r.get("rolled_back") is not True or (r.get("error") or {}).get("name") != \
                "ZeroDivisionError":
            raise Fail(f"failing cell: rolled_back {r.get('rolled_back')!r} error "
                       f"{r.get('error')!r}")
        r = s.jreq("POST", base + "/execute", {"code": "print(x)"})
        if r.get("stdout") != "41\n":
            raise Fail(f"after the rollback x is {r.get('stdout')!r} (want 41)")
        st, data = s.req("PUT", base + "/files/in.txt", b"hello vm", ctype="application/octet-stream")
        if st != 201:
            raise Fail(f"upload: {st} {data[:200]!r}")
        r = s.jreq("POST", base + "/execute", {
            "code": "d = open('/workspace/in.txt').read()\n"
                    "open('/workspace/out.txt', 'w').write(d.upper())"})
        if r.get("exit_code") != 0:
            raise Fail(f"file cell: {r.get('error')!r} {tail(r.get('stderr'), 200)!r}")
        st, data = s.req("GET", base + "/files/out.txt")
        if st != 200 or data != b"HELLO VM":
            raise Fail(f"download: {st} {data[:100]!r}")
        # A cell's OOM is the cell's MemoryLimit: rolled back, and the session lives on.
        r = s.jreq("POST", base + "/execute", {"code": "x = 7\n" + BOMB})
        want_memory_limit(r, "session cell")
        if r.get("rolled_back") is not True:
            raise Fail(f"the OOM cell was not rolled back: {r!r}"[:400])
        r = s.jreq("POST", base + "/execute", {"code": "print(x)"})
        if r.get("stdout") != "41\n":
            raise Fail(f"after the OOM cell x is {r.get('stdout')!r} (want 41): "
                       f"{r.get('error')!r}")
        st, data = s.req("DELETE", base)
        if st != 204:
            raise Fail(f"delete: {st} {data[:200]!r}")
    finally:
        rc = s.stop()
    if rc != 0:
        raise Fail(f"serve exited {rc} after SIGTERM: {tail(s.proc.stderr.read())}")


def reuse_expected():
    # Emptied cgroups are kept for reuse where a cgroup's peak can be reset: v2 from 6.12.
    major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    return (major, minor) >= (6, 12)


def check_cgroup_reuse():
    # A run's emptied cgroup given to the next runs (6.12+) has its limits rewritten and its
    # counters reset: a lower cap holds, a higher one allows again, a run after an OOM kill
    # reports none and its own peak. Before 6.12 nothing is kept, and the same must hold.
    s = Serve("--pool", "1", "--memory", "256M")
    try:
        for i in range(3):
            r = s.jreq("POST", "/v1/execute", {"code": "b = b'x' * (150 << 20)\nprint(len(b) >> 20)"})
            if r.get("stdout") != "150\n" or (r.get("peak_memory_bytes") or 0) < 150 << 20:
                raise Fail(f"round {i}, 150 MiB under 256M: exit {r.get('exit_code')} stdout "
                           f"{r.get('stdout')!r} peak {r.get('peak_memory_bytes')} error "
                           f"{r.get('error')!r}")
            r = s.jreq("POST", "/v1/execute", {"code": "b = b'x' * (150 << 20)", "memory": "100M"})
            want_memory_limit(r, f"round {i}, 150 MiB under 100M")
            r = s.jreq("POST", "/v1/execute", {"code": "print(1)"})
            if r.get("stdout") != "1\n" or r.get("oom_killed") is not False or \
                    (r.get("peak_memory_bytes") or 1 << 40) >= 64 << 20:
                raise Fail(f"round {i}, print(1) after them: stdout {r.get('stdout')!r} "
                           f"oom_killed {r.get('oom_killed')!r} peak {r.get('peak_memory_bytes')}")
        st, data = s.req("GET", "/metrics")
        reused = [ln.split()[1] for ln in data.decode().splitlines()
                  if ln.startswith("execbox_cgroups_reused_total ")]
    finally:
        rc = s.stop()
    if rc != 0:
        raise Fail(f"serve exited {rc} after SIGTERM: {tail(s.proc.stderr.read())}")
    n = int(float(reused[0])) if reused else -1
    # At least one: runs release their cgroups in the background, and a pool's refill may come
    # first and make its own.
    if reuse_expected() and n < 1 or not reuse_expected() and n != 0:
        raise Fail(f"execbox_cgroups_reused_total {n} on {os.uname().release}")
    print(f"  cgroups reused: {n}", flush=True)


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello from the vm"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def check_network():
    servers = []
    for _ in range(2):
        srv = http.server.ThreadingHTTPServer(("127.0.0.2", 0), Hello)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
    ok_port, other_port = (srv.server_address[1] for srv in servers)
    code = f"""
import urllib.request
print(urllib.request.urlopen("http://127.0.0.2:{ok_port}/", timeout=30).read().decode())
try:
    urllib.request.urlopen("http://127.0.0.2:{other_port}/", timeout=30)
    print("OTHER REACHED")
except Exception as e:
    print("other refused:", type(e).__name__)
"""
    try:
        r, _ = run_json("--network", "allow", "--allow-host", f"127.0.0.2:{ok_port}", "-c", code)
    finally:
        for srv in servers:
            srv.shutdown()
    out = r.get("stdout", "")
    if "hello from the vm" not in out:
        raise Fail(f"the allowed server was not reached: exit {r.get('exit_code')} stdout "
                   f"{tail(out, 200)!r} stderr {tail(r.get('stderr'), 300)!r}")
    if "OTHER REACHED" in out or "other refused" not in out:
        raise Fail(f"the port not listed was not refused: {tail(out, 200)!r}")


def execbox_cgroups():
    # What execbox keeps on purpose is not left over: the leaf its own processes moved into
    # (execbox.main) and, where no systemd manages the tree, the cgroup it made at the top
    # (/sys/fs/cgroup/execbox) that runs' cgroups (execbox-*) go below.
    found = []
    for top, dirs, _ in os.walk("/sys/fs/cgroup"):
        for d in dirs:
            path = os.path.join(top, d)
            if d.startswith("execbox") and d != "execbox.main" and \
                    path != "/sys/fs/cgroup/execbox":
                found.append(path)
    return found


def execbox_procs():
    mine = {os.getpid()}
    left = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in mine:
            continue
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if os.path.basename(exe).startswith("execbox"):
            left.append(f"{pid}:{exe}")
    return left


def execbox_mounts():
    with open("/proc/self/mountinfo") as f:
        return [ln.split()[4] for ln in f if ln.split()[4].startswith("/run/execbox/")
                and not ln.split()[4].startswith("/run/execbox/mntns")]


def check_teardown():
    # A serve with a pool and a session open, stopped by SIGTERM: nothing of execbox may remain.
    s = Serve("--pool", "1")
    try:
        s.jreq("POST", "/v1/sessions", {}, want=201)
        r = s.jreq("POST", "/v1/execute", {"code": "print(2)"})
        if r.get("stdout") != "2\n":
            raise Fail(f"execute: {r.get('error')!r} {tail(r.get('stderr'), 200)!r}")
    finally:
        rc = s.stop()
    time.sleep(1)
    why = []
    if rc != 0:
        why.append(f"serve exited {rc}")
    cgs = execbox_cgroups()
    if cgs:
        why.append(f"cgroups left: {' '.join(cgs[:6])}")
    procs = execbox_procs()
    if procs:
        why.append(f"processes left: {' '.join(procs[:6])}")
    mounts = execbox_mounts()
    if mounts:
        why.append(f"mounts left under /run/execbox: {' '.join(mounts[:6])}")
    if why:
        raise Fail("; ".join(why))


def check_teardown_kill():
    # A serve SIGKILLed with a pool, a session and a run in flight: once the next execbox has
    # started (its start-up sweep) and stopped, nothing of execbox may remain.
    s = Serve("--pool", "1")
    sess = s.jreq("POST", "/v1/sessions", {}, want=201)
    s.jreq("POST", f"/v1/sessions/{sess['id']}/execute", {"code": "y = 1"})
    def in_flight():
        # The serve is SIGKILLed under this request: its connection drops, as it must.
        try:
            s.req("POST", "/v1/execute", {"code": "import time; time.sleep(60)"}, timeout=30)
        except (OSError, http.client.HTTPException):
            pass

    busy = threading.Thread(target=in_flight, daemon=True)
    busy.start()
    time.sleep(2)
    s.proc.kill()
    s.proc.wait()
    # The sweep runs at most once every 10 s per host (a stamp): wait that out, then start.
    time.sleep(11)
    again = Serve()
    rc = again.stop()
    time.sleep(1)
    why = []
    if rc != 0:
        why.append(f"the next serve exited {rc}")
    cgs = execbox_cgroups()
    if cgs:
        why.append(f"cgroups left: {' '.join(cgs[:6])}")
    procs = execbox_procs()
    if procs:
        why.append(f"processes left: {' '.join(procs[:6])}")
    mounts = execbox_mounts()
    if mounts:
        why.append(f"mounts left under /run/execbox: {' '.join(mounts[:6])}")
    if why:
        raise Fail("; ".join(why))


def check_busctl():
    # systemd layouts only: systemd's bus answers (execbox asks it for a delegated scope).
    p = sh(["busctl", "--no-pager", "status", "org.freedesktop.systemd1"], timeout=60)
    if p.returncode != 0:
        raise Fail(f"busctl: {tail(p.stderr)}")


def check_walls():
    # TCG emulates every instruction: a name walked in a jail costs about a millisecond where a
    # host takes microseconds, so test_rm_rf_root's walk of the whole tree is the longest test
    # here. The guest hides the large trees of /usr nothing reads (tests/vm/init): the whole
    # suite then took 90 s on 6.1 (2026-12-06); allow each run 480 s for a busy host.
    env = dict(os.environ, EXECBOX=EXE, EXECBOX_SOURCE=SRC, EXECBOX_TEST_SLOWDOWN="8",
               EXECBOX_BUILD=os.environ.get("EXECBOX_BUILD", os.path.dirname(EXE)))
    p = sh([sys.executable, os.path.join(SRC, "tests", "integration", "jail_walls.py")],
           timeout=1500, env=env)
    last = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.strip()][-1:] or ["(no output)"]
    if p.returncode == 77:
        raise Fail(f"skipped (77): {tail(p.stdout, 300)}")
    if p.returncode != 0:
        fails = [ln for ln in (p.stdout + p.stderr).splitlines()
                 if ln.startswith(("FAIL", "ERROR", "not ok", "fail"))]
        raise Fail(f"exit {p.returncode}: {' / '.join(fails[:8])[:600]} [{last[0][:200]}]")
    print(f"  walls: {last[0][:200]}", flush=True)


CHECKS = [("check", check_check), ("churn", check_churn), ("memory_limit", check_memory_limit),
          ("warm", check_warm), ("host_workspace", check_host_workspace),
          ("session", check_session), ("cgroup_reuse", check_cgroup_reuse),
          ("network", check_network),
          ("teardown", check_teardown), ("teardown_kill", check_teardown_kill)]
EXTRA = {"busctl": check_busctl, "walls": check_walls}


def main(argv):
    names = [a for a in argv if not a.startswith("--")]
    todo = [(n, f) for n, f in CHECKS if not names or n in names]
    todo += [(n, f) for n, f in EXTRA.items() if n in names or f"--{n}" in argv]
    print(f"checks: {os.uname().release}, cgroup {open('/proc/self/cgroup').read().strip()}, "
          f"execbox {EXE}", flush=True)
    passed = failed = 0
    for name, fn in todo:
        t0 = time.monotonic()
        try:
            fn()
            passed += 1
            print(f"ok {name} ({time.monotonic() - t0:.1f} s)", flush=True)
        except Exception as e:  # noqa: BLE001 - every failure is this check's, reported
            failed += 1
            why = str(e) if isinstance(e, Fail) else f"{type(e).__name__}: {e}"
            print(f"FAIL {name}: {why} ({time.monotonic() - t0:.1f} s)", flush=True)
    print(f"{passed} passed, {failed} failed", flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
