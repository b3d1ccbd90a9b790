#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Warm pool against cold starts through the library, in one run: p50/p99 latency, throughput
# and CPU per run for print(6*7) and for a pandas describe(), at concurrency 1, 2 and 8.
# Usage: bench/pool.sh [BACKEND]   (default: the library's default backend)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${EXECBOX_BUILD:-build-release}/execbox_poolbench
[[ -x $bin ]] || bin=build/execbox_poolbench
b=()
[[ -n ${1:-} ]] && b=(-b "$1")
n=${RUNS:-200}
pandas='import pandas as pd; print(pd.DataFrame({"a": range(100)}).describe().loc["mean", "a"])'
echo "# poolbench, backend ${1:-default}, $n runs each, $(nproc) cores"
"$bin" "${b[@]}" -n "$n" -j 1 -l "print cold c=1"
"$bin" "${b[@]}" -n "$n" -j 1 -p 4 -l "print warm c=1"
"$bin" "${b[@]}" -n "$n" -j 2 -p 8 -l "print warm c=2"
"$bin" "${b[@]}" -n "$n" -j 8 -p 16 -l "print warm c=8"
"$bin" "${b[@]}" -n $((n / 4)) -j 1 -c "$pandas" -l "pandas cold c=1"
"$bin" "${b[@]}" -n $((n / 4)) -j 1 -p 4 -P numpy,pandas -c "$pandas" -l "pandas warm c=1"
