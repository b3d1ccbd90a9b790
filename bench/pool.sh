#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The warm pool against cold starts, in one run: p50/p99 latency, throughput and CPU per run
# for print(6*7) and for a pandas describe(), through the library (bench/poolbench.c) and
# through `execbox serve` (bench/serve_client.c), at concurrency 1, 2 and 8.
# Usage: bench/pool.sh [BACKEND]   (default: the library's default backend, the jail)
# Environment: RUNS (requests per level, default 200), BUILD (default build-release, else build).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-release}
[[ -x $build/execbox_poolbench ]] || build=build
bench=$build/execbox_poolbench
bin=$build/execbox
b=()
[[ -n ${1:-} ]] && b=(-b "$1")
n=${RUNS:-200}
pandas='import pandas as pd; print(pd.DataFrame({"a": range(100)}).describe().loc["mean", "a"])'
echo "# warm pool vs cold, backend ${1:-default}, $n runs per level, $(nproc) cores, $(date -u +%FT%TZ)"
echo "## through the library (p50/p99 per run; -s: runs paced, not saturating the machine)"
"$bench" "${b[@]}" -n "$n" -j 1 -s 20 -l "print cold c=1 paced"
"$bench" "${b[@]}" -n "$n" -j 1 -s 20 -p 2 -l "print warm c=1 paced"
"$bench" "${b[@]}" -n "$n" -j 1 -l "print cold c=1"
"$bench" "${b[@]}" -n "$n" -j 1 -p 4 -l "print warm c=1"
"$bench" "${b[@]}" -n "$n" -j 2 -l "print cold c=2"
"$bench" "${b[@]}" -n "$n" -j 2 -p 8 -l "print warm c=2"
"$bench" "${b[@]}" -n "$n" -j 8 -l "print cold c=8"
"$bench" "${b[@]}" -n "$n" -j 8 -p 16 -l "print warm c=8"
"$bench" "${b[@]}" -n $((n / 10)) -j 1 -s 500 -c "$pandas" -l "pandas cold c=1 paced"
"$bench" "${b[@]}" -n $((n / 10)) -j 1 -s 500 -p 2 -P numpy,pandas -c "$pandas" -l "pandas warm c=1 paced"

echo "## through execbox serve (HTTP on loopback, keep-alive)"
. bench/lib.sh
bench_setup pool
serve() { bench_serve "$log" "$bin" --queue 256 --workers 8 "${b[@]/#-b/--backend}" "$@"; }
stop() { bench_stop; }
pbody='{"code": "import pandas as pd; print(pd.DataFrame({\"a\": range(100)}).describe().loc[\"mean\", \"a\"])"}'
# print(6*7): a cold server, then one keeping 8 warm sandboxes (no preload: each costs one
# interpreter start).
for mode in cold warm; do
    args=()
    [[ $mode == warm ]] && args=(--pool 8)
    serve "${args[@]}"
    sleep 2
    for c in 1 2 8; do
        printf 'serve %-5s print  c=%d  ' "$mode" "$c"
        "$client" "$port" "$n" "$c"
    done
    stop
done
# pandas describe(), paced by a single client: cold, then with pandas preloaded in the pool
# (every warm sandbox then costs a pandas import, ~0.25 s of CPU: it suits pandas-heavy traffic).
for mode in cold warm; do
    args=()
    [[ $mode == warm ]] && args=(--pool 4 --preload numpy,pandas)
    serve "${args[@]}"
    sleep 3
    printf 'serve %-5s pandas c=1  ' "$mode"
    "$client" "$port" $((n / 10)) 1 "$pbody" '"stdout":"49.5\n"'
    stop
done
