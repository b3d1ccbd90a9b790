#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reliability figures (not part of `make test`; `make soak`): kill -9 of `execbox run` mid-run,
of `execbox serve` with 4 runs in flight, and of `execbox mcp --pool 2` with a call in flight
and two warm sandboxes waiting. For each round it counts, right after the kill and again after
one more start of execbox, what the killed process left: processes (in its cgroups, or the
guest's own marked children), mounts (in our mount table, and mount namespaces still held by
such processes), cgroups named after it, temp dirs and stages named after it, and whether the
host workspace directory (owner, group, mode, no setuid/setgid file) is unchanged.

The start-up sweep runs at most once every EB_SWEEP_INTERVAL (10 s) per host, so "one more
start" is made once that interval has passed since the kill. Needs root (the jail's cgroups).

Usage: tests/soak/kill9.py [--rounds N] [--execbox PATH]"""
import argparse
import glob
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from common import check_pins, split_pins  # noqa: E402

SWEEP_INTERVAL = 10


def guest_code(nonce, marker):
    # Two marked children that ignore nothing special, then the guest itself waits.
    return ("import subprocess, time, os\n"
            f"kids = [subprocess.Popen(['sleep', '3600.{nonce}']) for _ in range(2)]\n"
            f"open(os.path.join(os.getcwd(), '{marker}'), 'w').close()\n"
            "time.sleep(60)\n")


def procs_of(pid, nonce):
    """Processes left: in a cgroup named after pid, or carrying the nonce on their command line."""
    found = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            cg = open(d + "/cgroup").read()
            cmd = open(d + "/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"execbox-{pid}-" in cg or nonce in cmd:
            found.append(int(d[6:]))
    return found


def mounts_of(pid, procs):
    # The documented, bounded pin of the jail's prepared mount namespace is not a leak
    # (docs/jail.md; tests/integration/common.py split_pins): everything else of ours is.
    pins, rest = split_pins(open("/proc/self/mountinfo").read().splitlines())
    check_pins(pins)
    ours = [l for l in rest
            if "/run/execbox" in l or "execbox-ws" in l or f"execbox-{pid}" in l]
    ns = set()
    for p in procs:
        try:
            ns.add(os.readlink(f"/proc/{p}/ns/mnt"))
        except OSError:
            pass
    return len(ours) + len(ns)


def cgroups_of(pid):
    left = []
    for top in glob.glob("/sys/fs/cgroup/*") + ["/sys/fs/cgroup"]:
        for d, dirs, _ in os.walk(top):
            if d.count("/") > 9:
                dirs[:] = []
                continue
            for n in dirs:
                if n.startswith(f"execbox-{pid}-"):
                    left.append(os.path.join(d, n))
    return sorted(set(left))


def temps_of(pid):
    tmp = tempfile.gettempdir()
    return (glob.glob(f"{tmp}/execbox-*{pid}-*") + glob.glob(f"/run/execbox/*.{pid}-*"))


def ws_state(ws):
    st = os.stat(ws)
    special = [n for d, ds, fs in os.walk(ws) for n in [d] + [os.path.join(d, x) for x in ds + fs]
               if os.lstat(n).st_mode & (stat.S_ISUID | stat.S_ISGID)]
    return (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), len(special))


def count(pid, nonce, ws, ws_before):
    procs = procs_of(pid, nonce)
    return {"processes": len(procs), "mounts": mounts_of(pid, procs),
            "cgroups": len(cgroups_of(pid)), "temp_dirs": len(temps_of(pid)),
            "workspace_unchanged": ws is None or ws_state(ws) == ws_before}


def wait_for(path, proc, timeout=60, n=1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"execbox exited early: {proc.returncode}")
        if len(glob.glob(path)) >= n:
            return
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {path}")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def scenario_run(exe, ws, nonce):
    p = subprocess.Popen([exe, "run", "-b", "jail", "-t", "120", "-w", ws, "-c",
                          guest_code(nonce, "started")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(os.path.join(ws, "started"), p)
    return p


def scenario_serve(exe, ws, nonce):
    port = free_port()
    p = subprocess.Popen([exe, "serve", "-L", f"127.0.0.1:{port}", "--workers", "4", "-t", "120",
                          "-w", ws], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or p.poll() is not None:
                raise RuntimeError("serve did not start")
            time.sleep(0.05)

    def post(i):
        body = json.dumps({"code": guest_code(nonce, f"started-{i}")}).encode()
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=130)
            s.sendall(b"POST /v1/execute HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) + body)
            s.recv(1)
            s.close()
        except OSError:
            pass
    for i in range(4):
        threading.Thread(target=post, args=(i,), daemon=True).start()
    wait_for(os.path.join(ws, "started-*"), p, n=4)
    return p


def scenario_mcp(exe, ws, nonce):
    p = subprocess.Popen([exe, "mcp", "--pool", "2", "-t", "120"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(msg):
        p.stdin.write((json.dumps(msg) + "\n").encode())
        p.stdin.flush()
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                     "clientInfo": {"name": "soak", "version": "1"}}})
    p.stdout.readline()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    # No host workspace with a pool (warm runs have fresh ones): the marker is a process.
    code = ("import subprocess, time\n"
            f"kids = [subprocess.Popen(['sleep', '3600.{nonce}']) for _ in range(2)]\n"
            "time.sleep(60)\n")
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
          "params": {"name": "execute_python", "arguments": {"code": code}}})
    deadline = time.monotonic() + 60
    while len([x for x in procs_of(-1, nonce)]) < 2:
        if time.monotonic() > deadline or p.poll() is not None:
            raise RuntimeError("mcp call did not start")
        time.sleep(0.05)
    time.sleep(1.0)  # the pool refills behind the call: two warm sandboxes waiting
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--execbox", default=os.environ.get("EXECBOX") or os.path.join(
        os.path.dirname(__file__), "..", "..", "build", "execbox"))
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root")
        return 77
    exe = os.path.abspath(a.execbox)
    totals = {}
    for name, fn in (("run", scenario_run), ("serve", scenario_serve), ("mcp --pool 2", scenario_mcp)):
        for r in range(a.rounds):
            ws = tempfile.mkdtemp(prefix="eb-soak-ws-")
            os.chown(ws, 1234, 2345)
            os.chmod(ws, 0o750)
            before = ws_state(ws)
            nonce = str(uuid.uuid4().int % 10**12).zfill(12)  # digits: sleep takes 3600.<nonce>
            p = fn(exe, ws, nonce)
            t_kill = time.monotonic()
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            time.sleep(2.0)  # what dies with the namespaces has had time to
            after = count(p.pid, nonce, ws if name != "mcp --pool 2" else None, before)
            time.sleep(max(0.0, SWEEP_INTERVAL + 1 - (time.monotonic() - t_kill)))
            subprocess.run([exe, "run", "-b", "jail", "-c", "pass"], capture_output=True, timeout=120)
            again = count(p.pid, nonce, ws if name != "mcp --pool 2" else None, before)
            print(json.dumps({"scenario": name, "round": r + 1, "killed_pid": p.pid,
                              "after_kill": after, "after_one_more_start": again}), flush=True)
            for k, v in (("after_kill", after), ("after_one_more_start", again)):
                t = totals.setdefault((name, k), {})
                for kk, vv in v.items():
                    if isinstance(vv, bool):
                        t[kk] = t.get(kk, True) and vv
                    else:
                        t[kk] = t.get(kk, 0) + vv
            for pid in procs_of(p.pid, nonce):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            subprocess.run(["rm", "-rf", ws])
    print("\nsummary (sums over rounds; workspace_unchanged: all rounds)")
    bad = False
    for (name, k), t in totals.items():
        print(f"  {name:13} {k:21} {json.dumps(t)}")
        if k == "after_one_more_start":
            bad |= any(v for kk, v in t.items() if kk != "workspace_unchanged") or \
                not t["workspace_unchanged"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
