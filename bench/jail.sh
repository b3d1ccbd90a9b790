#!/bin/bash
# SPDX-License-Identifier: MIT
# Cold start of one sandboxed `python3 -c pass`, in one hyperfine run: bare python, execbox's
# jail (every wall: user/pid/mount/net/ipc/uts/cgroup namespaces, a cgroup, tmpfs root +
# pivot_root, seccomp, Landlock), and bubblewrap in a comparable locked-down configuration
# (it has no resource limits at all). Prints the medians, the overhead over bare python in ms,
# and the ratio. Needs hyperfine and bwrap (scripts/deps/bench.apt). Usage: bench/jail.sh [EXECBOX]
set -euo pipefail
cd "$(dirname "$0")/.."
EXECBOX=${1:-build-release/execbox}
[ -x "$EXECBOX" ] || { cmake --preset release >/dev/null && cmake --build --preset release >/dev/null; }
PY=/usr/bin/python3
RUNS=${RUNS:-300}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

bwrap_cmd="bwrap --unshare-all --die-with-parent --new-session --cap-drop ALL \
 --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 \
 --symlink usr/sbin /sbin --ro-bind /etc /etc --proc /proc --dev /dev --tmpfs /tmp \
 --tmpfs /workspace --chdir /workspace --clearenv --setenv PATH /usr/bin:/bin \
 --setenv HOME /workspace --setenv TMPDIR /tmp $PY -B -c pass"

"$EXECBOX" check -b jail | sed -n '/tier/p'
hyperfine -N --warmup 20 --runs "$RUNS" --export-json "$out/h.json" \
  -n bare "$PY -B -c pass" \
  -n jail "$EXECBOX run -b jail -c pass" \
  -n bwrap "$bwrap_cmd" >/dev/null

python3 - "$out/h.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
bare = r["bare"]["median"] * 1e3
print(f"{'':6} {'median ms':>10} {'min ms':>7} {'+ms vs bare':>12} {'ratio':>6} {'cpu ms':>7} {'+cpu ms':>8}")
cpu = lambda x: (x["user"] + x["system"]) * 1e3
for n in ("bare", "jail", "bwrap"):
    m = r[n]["median"] * 1e3
    print(f"{n:6} {m:10.2f} {r[n]['min']*1e3:7.2f} {m - bare:+12.2f} {m / bare:6.2f} "
          f"{cpu(r[n]):7.2f} {cpu(r[n]) - cpu(r['bare']):+8.2f}")
print("(cpu = mean user+system of the whole process tree; less sensitive to a busy machine)")
PY
