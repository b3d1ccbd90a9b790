#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Page faults of a template run, counted (not timed, so builds compare without noise): through
# `execbox serve --pool 2 --preload PRELOAD`, the guest's minor faults at the program's first
# line and after it, for print(1) and a pandas describe(); the same in a bare fork of the same
# preloaded interpreter; and what one fault costs this machine (bench/tpl_faults.py). A page
# fault is most of what a fork copies from its template: see docs/pool.md. Needs root.
# Usage: bench/tpl_faults.sh [BUILD_DIR]   Environment: RUNS (default 10), PRELOAD (default
# numpy,pandas), BUILD_B (a second build, measured after the first).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
build=${1:-build-release}
runs=${RUNS:-10}
preload=${PRELOAD:-numpy,pandas}
bench_setup execbox-tplfaults
echo "# guest page faults per template run, serve --pool 2 --preload $preload, median of $runs"
for b in "$build" ${BUILD_B:+"$BUILD_B"}; do
    [[ -x $b/execbox ]] || { echo "no $b/execbox: make release" >&2; exit 1; }
    bench_serve "$log" "$b/execbox" --pool 2 --preload "$preload"
    python3 bench/tpl_faults.py serve "$port" 2 >/dev/null # the template ready, the pool full
    echo "$b"
    python3 bench/tpl_faults.py serve "$port" "$runs"
    bench_stop
done
echo "bare fork of the same interpreter (/usr/bin/python3, $preload imported)"
/usr/bin/python3 bench/tpl_faults.py bare "$preload"
