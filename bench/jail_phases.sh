#!/bin/bash
# SPDX-License-Identifier: MIT
# Where a cold `execbox run -c pass` spends its time, phase by phase, from kernel tracepoints
# (perf trace: a few syscalls and the sched exec/exit events, no instrumented build): medians of
# RUNS runs, with bare `python3 -B -c pass` traced the same way for the interpreter's own share.
#   start      the execbox binary is exec'd (sched_process_exec)
#   pool       its netns pool thread starts (clone3): loading the binary and its libraries, main,
#              option parsing, the jail's probe (from its cache: lib/jail/cache.h)
#   clone      the sandbox's init is cloned (clone3): stage check, filter, cgroup, pipes, plans
#   exec       the guest execs python: init's mounts, ids, privileges, the guest's fork,
#              Landlock, seccomp
#   py exit    python's exit_group: the interpreter (compare with bare)
#   exit       execbox's exit_group: what the parent does after the guest (init's report,
#              cgroup stats and removal, workspace listing, printing, closing)
# Needs perf (linux-perf) and root. Usage: bench/jail_phases.sh [BUILD_DIR] (RUNS=40)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(cd "${1:-build-release}" && pwd)
exec python3 - "$BUILD" "${RUNS:-40}" <<'PY'
import re, statistics, subprocess, sys

build, runs = sys.argv[1], int(sys.argv[2])
EV = "clone3,execve,exit_group"
line_re = re.compile(r"^\s*([\d.]+) \([^)]*\): (\S+)/(\d+)\s+([\w:]+)\((.*?)\)\s*(?:= (\S+)|\.\.\.)?\s*$")


def trace(argv):
    p = subprocess.run(["perf", "trace", "-f", "-e", EV, "-e", "sched:sched_process_exec", "--"]
                       + argv, capture_output=True, text=True, timeout=60)
    ev = []
    for ln in p.stderr.splitlines():
        m = line_re.match(ln)
        if m and "[continued]" not in ln:
            ev.append((float(m.group(1)), m.group(2), int(m.group(3)), m.group(4),
                       m.group(6) if m.group(6) is not None else m.group(5)))
    return ev


def phases_execbox(ev):
    main = [e for e in ev if e[3] == "sched:sched_process_exec" and "execbox" in e[1]][0]
    t0, mp = main[0], main[2]
    clones = [e for e in ev if e[2] == mp and e[3] == "clone3" and e[4] and e[4].isdigit()]
    py = [e for e in ev if e[3] == "sched:sched_process_exec" and "python3" in (e[4] or "")][0]
    pyexit = [e for e in ev if e[2] == py[2] and e[3] == "exit_group"][0]
    mexit = [e for e in ev if e[2] == mp and e[3] == "exit_group"][-1]
    init = [c for c in clones if c[0] < py[0]][-1]
    pool = clones[0] if len(clones) > 1 else init
    return {"start -> pool": pool[0] - t0, "pool -> clone": init[0] - pool[0],
            "clone -> exec": py[0] - init[0], "exec -> py exit": pyexit[0] - py[0],
            "py exit -> exit": mexit[0] - pyexit[0], "total": mexit[0] - t0}


def phases_bare(ev):
    ex = [e for e in ev if e[3] == "sched:sched_process_exec"][0]
    out = [e for e in ev if e[3] == "exit_group"][-1]
    return {"exec -> py exit": out[0] - ex[0]}


got, bare, lost = {}, [], 0
for i in range(runs):
    try:  # perf may lose an event on a busy machine: that run is left out
        ph = phases_execbox(trace([f"{build}/execbox", "run", "-b", "jail", "-c", "pass"]))
        b = phases_bare(trace(["/usr/bin/python3", "-B", "-c", "pass"]))["exec -> py exit"]
    except IndexError:
        lost += 1
        continue
    for k, v in ph.items():
        got.setdefault(k, []).append(v)
    bare.append(b)
print(f"phases of a cold `execbox run -c pass`, median of {runs - lost} runs (perf trace), ms")
for k, v in got.items():
    print(f"  {k:18} {statistics.median(v):7.2f}")
print(f"  {'bare python':18} {statistics.median(bare):7.2f}")
PY
