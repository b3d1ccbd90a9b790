#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where the machine's CPU goes in a cold `execbox run -b jail -c pass`, beside bubblewrap running
# the same `python3 -B -c pass` with the same namespaces (bench_bwrap in bench/lib.sh, also
# bench/jail.sh's baseline): RUNS of each, one after the other, under `perf record -a -g`, in
# ROUNDS alternating rounds; each recording split by bench/cpu_split.py into rows by kernel entry
# point and columns by process (the CLI, the sandbox's init, the guest python; bwrap's two
# processes), scaled to the machine's busy ms per run measured around it (/proc/stat, so a row is
# that ms's share). perf's own overhead is in every figure, about alike for both; bench/jail.sh
# has the totals without it. Needs perf, bwrap, root.
# Usage: bench/cold_cpu.sh [BUILD_DIR]   Environment: RUNS (default 200), ROUNDS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-release}
[[ -x $build/execbox ]] || { cmake --preset release >/dev/null && cmake --build --preset release >/dev/null; build=build-release; }
n=${RUNS:-200}
rounds=${ROUNDS:-2}
. bench/lib.sh
work=$(mktemp -d /tmp/coldcpu.XXXXXX)
trap 'rm -rf "$work"' EXIT
hz=$(getconf CLK_TCK)
py=(/usr/bin/python3 -B -c pass)
declare -A cmd
cmd[cold]="$build/execbox run -b jail -c pass"
cmd[bwrap]="$(printf '%q ' "${bench_bwrap[@]}" "${py[@]}")"
echo "# machine CPU per cold start, perf record -a -g, $n runs a recording, $rounds rounds, $(nproc) cores,"
echo "# $(date -u +%FT%TZ), $("$build/execbox" --version 2>/dev/null || true)"
for r in $(seq "$rounds"); do
    for kind in cold bwrap; do
        # shellcheck disable=SC2086 # the command lines above are split on purpose
        ${cmd[$kind]} >/dev/null # a first start outside the recording (caches, the stage)
        b0=$(bench_busy)
        perf record -a -g -q -o "$work/$kind.data" -- bash -c \
            "for _ in \$(seq $n); do ${cmd[$kind]} >/dev/null || exit 1; done"
        b1=$(bench_busy)
        per=$(awk -v a="$b0" -v b="$b1" -v n="$n" -v hz="$hz" 'BEGIN{printf "%.3f", (b-a)*1000/hz/n}')
        echo
        echo "# round $r, $kind: $per ms of machine CPU per run under perf"
        perf script -i "$work/$kind.data" -F comm,pid,ip,sym 2>/dev/null |
            python3 bench/cpu_split.py --kind "$kind" --per "$per"
    done
done
