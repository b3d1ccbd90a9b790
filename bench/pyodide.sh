#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The pyodide backend cold and warm: the latency of `POST /v1/execute {"code": "print(6*7)"}`
# to `execbox serve -b pyodide` without a pool (every run loads Pyodide in a fresh jail) and
# with `--pool 1` (node loads Pyodide in the sandbox ahead of time). The pool counts a sandbox
# ready once its jail is up, while node is still loading Pyodide in it, so each warm request
# waits until one is ready and then SETTLE seconds more (default 10): it measures a warm run,
# not the pool's refill rate; SETTLE=0 shows a request that arrives while the load goes on. Then, outside
# any sandbox, node's own loadPyodide() against loadPyodide({_loadSnapshot}) from a memory
# snapshot (Pyodide 0.27's private snapshot option; not used by the backend).
# Medians of RUNS (default 5) runs each. Needs root (the jail), node, npm and curl.
# Usage: bench/pyodide.sh [EXECBOX] (default: build-release/execbox, else build/execbox).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
exe=${1:-}
[[ -n $exe ]] || { [[ -x build-release/execbox ]] && exe=build-release/execbox || exe=build/execbox; }
runs=${RUNS:-5}
if [[ -z ${EXECBOX_PYODIDE_DIR:-} ]]; then
    export EXECBOX_PYODIDE_DIR=${TMPDIR:-/tmp}/execbox-pyodide
    lib/backends/pyodide/install.sh "$EXECBOX_PYODIDE_DIR" >&2
fi
out=$(mktemp -d /tmp/execbox-bench-pyodide.XXXXXX)
pid=
cleanup() {
    [[ -n $pid ]] && bench_stop
    rm -rf "$out"
}
trap cleanup EXIT

ready() { # waits until the pool holds a warm sandbox (at most 180 s)
    for _ in $(seq 1800); do
        curl -s "http://$addr/metrics" | grep -q '^execbox_pool_ready [1-9]' && return 0
        sleep 0.1
    done
    echo "bench: no warm sandbox within 180 s" >&2
    exit 1
}

measure() { # NAME WARM: one serve, RUNS requests, their times (s) to $out/NAME
    local name=$1 warm=$2
    : >"$out/$name"
    for _ in $(seq "$runs"); do
        [[ $warm == 1 ]] && { ready; sleep "${SETTLE:-10}"; }
        curl -s -o "$out/body" -w '%{time_total}\n' -H 'Content-Type: application/json' \
            -d '{"code": "print(6*7)", "timeout": 120}' "http://$addr/v1/execute" >>"$out/$name"
        grep -q '"stdout":"42\\n"' "$out/body" || { echo "bench: bad reply: $(cat "$out/body")" >&2; exit 1; }
    done
}

bench_serve "$out/cold.log" "$exe" -b pyodide -t 120
measure cold 0
bench_stop
bench_serve "$out/warm.log" "$exe" -b pyodide -t 120 --pool 1
measure warm 1
bench_stop

# Node alone, no sandbox: loadPyodide() from nothing, and from a memory snapshot made once.
pdir=$EXECBOX_PYODIDE_DIR/node_modules/pyodide
cat >"$out/load.mjs" <<EOF
import fs from "node:fs";
const { loadPyodide } = await import("$pdir/pyodide.mjs");
const mode = process.argv[2], snap = "$out/pyodide.snap";
const t0 = performance.now();
let py;
if (mode === "make") {
    py = await loadPyodide({ indexURL: "$pdir/", _makeSnapshot: true });
    fs.writeFileSync(snap, py.makeMemorySnapshot());
} else if (mode === "snapshot") {
    py = await loadPyodide({ indexURL: "$pdir/", _loadSnapshot: fs.readFileSync(snap) });
} else {
    py = await loadPyodide({ indexURL: "$pdir/" });
}
py.runPython("print(6*7)");
if (mode !== "make") fs.appendFileSync("$out/" + mode, ((performance.now() - t0) / 1000) + "\n");
EOF
node "$out/load.mjs" make >/dev/null
for _ in $(seq "$runs"); do
    node "$out/load.mjs" plain >/dev/null
    node "$out/load.mjs" snapshot >/dev/null
done
snap_mb=$(($(stat -c %s "$out/pyodide.snap") >> 20))

python3 - "$out" "$runs" "$snap_mb" <<'EOF'
import statistics, sys
out, runs, snap = sys.argv[1], sys.argv[2], sys.argv[3]
def med(n):
    v = [float(x) for x in open(f"{out}/{n}") if x.strip()]
    return statistics.median(v) * 1000, min(v) * 1000, max(v) * 1000
print(f"pyodide, medians of {runs} runs (ms; min-max)")
print("| what | median | min | max |")
print("| --- | --- | --- | --- |")
for n, what in (("cold", "serve, no pool: a fresh jail loads Pyodide per run"),
                ("warm", "serve --pool 1: Pyodide loaded ahead in the run's jail (SETTLE s after ready)"),
                ("plain", "node loadPyodide() + print, no sandbox"),
                ("snapshot", f"node loadPyodide({{_loadSnapshot}}) + print, no sandbox ({snap} MiB)")):
    m, lo, hi = med(n)
    print(f"| {what} | {m:.0f} | {lo:.0f} | {hi:.0f} |")
EOF
