#!/bin/bash
# SPDX-License-Identifier: MIT
# Where a paced warm run through a template spends its time, phase by phase, from syscalls and
# tracepoints (perf trace attached to `execbox serve --pool 8 --preload PRELOAD` and everything
# it started, after the warm-up; no instrumented build): medians of RUNS paced requests of
# print(6*7). Times are ms from the moment the request's bytes reach the server (recvfrom of the
# front end), each event the first of its kind for that request:
#   go         the server writes the go byte (write of 1 byte): take, deliver /code, cpu base
#   wake       the guest's read of fd 3 returns: the wake-up of the forked interpreter
#   out        the guest's first write to fd 1: reseed, stdin, __main__, PyRun_FileExFlags
#   py exit    the guest's exit_group: the bootstrap's shutdown (atexit, clear, collect, flush)
#   py gone    the guest's sched_process_exit: the teardown of its address space
#   status     the run's init writes its report (fd 3): reap, kill, reap, (leave), rusage
#   init gone  the init's sched_process_exit
#   rmdir      the server's first and last rmdir (the run's cgroup)
#   answer     the front end sends the answer (sendto on the request's connection)
# plus the host CPU each request costs (per-process sums of the traced durations are not CPU:
# see bench/templates.sh for CPU per run). Needs perf (linux-perf) and root.
# Usage: bench/tpl_phases.sh [BUILD_DIR]   Environment: RUNS (default 40), PRELOAD
# (default numpy,pandas), PACE_MS (default 50), CODE (default print(6*7)).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(cd "${1:-build-release}" && pwd)
n=${RUNS:-40}
preload=${PRELOAD:-numpy,pandas}
code=${CODE:-print(6*7)}
. bench/lib.sh
bench_setup tplph
trace=$work/trace
tpid=
cleanup() {
    if [[ -n $tpid ]]; then
        kill -INT "$tpid" 2>/dev/null || true
        wait "$tpid" 2>/dev/null || true
    fi
    if [[ -n ${KEEP:-} && -e $trace ]]; then cp "$trace" "$KEEP"; fi
    bench_cleanup
}
trap cleanup EXIT
bench_serve "$log" "$BUILD/execbox" --queue 512 --workers 8 --pool 8 --preload "$preload"
body=$(python3 -c 'import json,sys; print(json.dumps({"code": sys.argv[1]}))' "$code")
"$client" "$port" 8 1 "$body" '"exit_code":0' >/dev/null
for _ in $(seq 200); do
    r=$(curl -s "http://127.0.0.1:$port/metrics" | awk '$1=="execbox_pool_ready"{print $2}')
    [[ ${r:-0} -ge 8 ]] && break
    sleep 0.1
done
# The server and everything it started (templates); runs forked later are inherited.
pids=$(python3 - "$pid" <<'PY'
import os, sys
root = int(sys.argv[1])
kids = {}
for d in os.listdir('/proc'):
    if d.isdigit():
        try:
            with open('/proc/%s/stat' % d) as f:
                s = f.read()
            kids.setdefault(int(s[s.rindex(')') + 2:].split()[1]), []).append(int(d))
        except OSError:
            pass
out, todo = [], [root]
while todo:
    p = todo.pop()
    out.append(p)
    todo += kids.get(p, [])
print(','.join(map(str, out)))
PY
)
ev=syscalls:sys_enter_recvfrom,syscalls:sys_exit_recvfrom,syscalls:sys_enter_sendto
ev=$ev,syscalls:sys_enter_write,syscalls:sys_exit_read,syscalls:sys_enter_exit_group
ev=$ev,sched:sched_process_exit,syscalls:sys_enter_rmdir,syscalls:sys_enter_wait4
# perf record (into a buffer, formatted afterwards): far less overhead than perf trace's live
# formatting, which would be most of what it measures.
perf record -q -o "$trace.data" -p "$pids" -e "$ev" 2>/dev/null &
tpid=$!
sleep 2
PACE_MS=${PACE_MS:-50} "$client" "$port" "$n" 1 "$body" '"exit_code":0'
sleep 0.5
kill -INT "$tpid"
wait "$tpid" || true
tpid=
perf script -i "$trace.data" -F comm,tid,time,event,trace >"$trace" 2>/dev/null
rm -f "$trace.data"
python3 - "$trace" "$pid" <<'PY'
import re, statistics, sys

path, server = sys.argv[1], int(sys.argv[2])
# perf script lines: COMM TID [CPU]? TIME: EVENT: ARGS
line_re = re.compile(r"^\s*(.+?)\s+(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)$")
ev = []  # (time in ms, tid, comm, event, args)
for ln in open(path, errors="replace"):
    m = line_re.match(ln)
    if m:
        comm, tid, t, name, args = m.groups()
        ev.append((float(t) * 1e3, int(tid), comm, name.split(":")[-1], args))
ev.sort(key=lambda e: e[0])

def tgid(tid):
    try:
        with open("/proc/%d/status" % tid) as f:
            for l in f:
                if l.startswith("Tgid:"):
                    return int(l.split()[1])
    except OSError:
        return None

srv = {t for t in {e[1] for e in ev} if tgid(t) == server}
def arg(args, key):
    m = re.search(r"\b%s: (0x[0-9a-f]+|-?\d+)" % key, args)
    return int(m.group(1), 0) if m else None

reqs, cur, enter_fd = [], None, {}
for t, tid, comm, name, args in ev:
    if name == "sys_enter_recvfrom":
        enter_fd[tid] = arg(args, "fd")
        continue
    if tid in srv and name == "sys_exit_recvfrom" and 0 < int(args.split()[-1], 0) < 1 << 63 \
            and (cur is None or "answer" in cur):
        if cur is not None:
            reqs.append(cur)  # what came after its answer (teardown) is still its own
        cur = {"t0": t, "fd": enter_fd.get(tid)}
        continue
    if cur is None:
        continue
    if tid in srv and name == "sys_enter_write" and arg(args, "count") == 1 and "go" not in cur:
        cur["go"], cur["reads"] = t, []
    elif name == "sys_exit_read" and "go" in cur and tid not in srv and "guest" not in cur:
        cur["reads"].append((tid, t))
    elif name == "sys_enter_write" and arg(args, "fd") == 1 and tid not in srv and "guest" not in cur \
            and "go" in cur:
        cur["guest"], cur["out"] = tid, t
        w = [x for g, x in cur["reads"] if g == tid]
        if w:
            cur["wake"] = w[0]
    elif tid == cur.get("guest") and name == "sys_enter_exit_group":
        cur["py exit"] = t
    elif tid == cur.get("guest") and name == "sched_process_exit":
        cur["py gone"] = t
    elif "execbox-i" in comm and name == "sys_enter_write" and arg(args, "fd") == 3 and \
            "guest" in cur and "status" not in cur:
        cur["status"], cur["init"] = t, tid
    elif tid == cur.get("init") and name == "sched_process_exit":
        cur["init gone"] = t
    elif tid in srv and name == "sys_enter_rmdir" and "go" in cur:
        cur.setdefault("rmdir first", t)
        cur["rmdir last"] = t
    elif tid in srv and name == "sys_enter_sendto" and arg(args, "fd") == cur["fd"] and "go" in cur:
        cur.setdefault("answer", t)
if cur is not None and "answer" in cur:
    reqs.append(cur)
order = ["go", "wake", "out", "py exit", "py gone", "status", "init gone", "rmdir first",
         "rmdir last", "answer"]
print("# %d paced requests traced; ms from the request's arrival, median (p10-p90)" % len(reqs))
med = {k: statistics.median([r[k] - r["t0"] for r in reqs if k in r] or [1e9]) for k in order}
prev = None
for k in sorted(order, key=lambda k: med[k]):
    v = [r[k] - r["t0"] for r in reqs if k in r]
    if not v:
        print("%-12s -" % k)
        continue
    v.sort()
    q = lambda f: v[min(len(v) - 1, int(f * len(v)))]
    d = ""
    if prev:
        dv = sorted(r[k] - r[prev] for r in reqs if k in r and prev in r)
        if dv:
            d = "  (+%.2f after %s)" % (statistics.median(dv), prev)
    print("%-12s %6.2f  (%.2f-%.2f)  n=%d%s" % (k, statistics.median(v), q(0.1), q(0.9), len(v), d))
    prev = k
PY
