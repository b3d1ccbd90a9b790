#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Template runs against the fork limit, with no profiler in the way: at each concurrency, ROUNDS
# alternating rounds of RUNS `print(1)` requests through a fresh `execbox serve --pool 8 --preload
# numpy,pandas` (one server per round, its warm-up left out), and of a bare fork of the same
# preloaded interpreter (bench/forklimit.py: compiled once in the parent, and compiling in each
# fork as a run sent new code must). Every figure of CPU is the machine's busy time per run
# (/proc/stat: user, nice, system, irq, softirq), measured the same way for execbox and the bare
# forks; the bare forks' own CPU (os.times) is printed beside it. /metrics says where each run's
# sandbox came from: warm (ready in the pool), forked (from the live template on a miss) or cold.
# With BUILD_B, a second build runs in the same rounds (before/after comparisons).
# Prints one line per round and kind, then medians and ratios. Needs root.
# Usage: bench/forkratio.sh   Environment: RUNS (default 1200: more than one template
# generation of 1000), ROUNDS (default 3), CONCS (default "1 2 8"), BUILD (default
# build-release), BUILD_B.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${RUNS:-1200}
rounds=${ROUNDS:-3}
concs=${CONCS:-1 2 8}
builds=("${BUILD:-build-release}")
[[ -n ${BUILD_B:-} ]] && builds+=("$BUILD_B")
for b in "${builds[@]}"; do
    [[ -x $b/execbox ]] || { echo "no $b/execbox: make release first" >&2; exit 1; }
done
. bench/lib.sh
bench_setup forkratio
hz=$(getconf CLK_TCK)
per_run() { awk -v a="$1" -v b="$2" -v n="$3" -v hz="$hz" 'BEGIN{printf "%.2f", (b-a)*1000/hz/n}'; }
body='{"code": "print(1)"}'
expect='"stdout":"1\n"'
runs_by() { bench_metric "execbox_pool_runs_total{sandbox=\"$1\"}"; }
rows=$work/rows

serve_round() { # build c: one fresh server, RUNS requests after its warm-up
    local b=$1 c=$2
    bench_serve "$work/serve.log" "$b/execbox" --queue 512 --workers 8 --pool 8 --preload numpy,pandas
    bench_warmup "$client" 16 "$body" "$expect"
    local w0 f0 c0 b0 b1 out
    w0=$(runs_by warm) f0=$(runs_by forked) c0=$(runs_by cold)
    b0=$(bench_busy)
    out=$("$client" "$port" "$n" "$c" "$body" "$expect")
    b1=$(bench_busy)
    local rate p50 p99
    rate=$(sed -n 's/.*req\/s=\([0-9.]*\).*/\1/p' <<<"$out")
    p50=$(sed -n 's/.*p50_ms=\([0-9.]*\).*/\1/p' <<<"$out")
    p99=$(sed -n 's/.*p99_ms=\([0-9.]*\).*/\1/p' <<<"$out")
    printf '%s c=%s runs/s %s cpu_ms %s p50_ms %s p99_ms %s warm %s forked %s cold %s\n' \
        "$b" "$c" "$rate" "$(per_run "$b0" "$b1" "$n")" "$p50" "$p99" \
        $(($(runs_by warm) - w0)) $(($(runs_by forked) - f0)) $(($(runs_by cold) - c0)) | tee -a "$rows"
    bench_stop
}

bare_round() { # kind c
    local kind=$1 c=$2 b0 b1 out
    b0=$(bench_busy)
    out=$(/usr/bin/python3 bench/forklimit.py numpy,pandas "$c" "$n" 'print(1)' \
        $([[ $kind == bare-child-compile ]] && echo child))
    b1=$(bench_busy)
    printf '%s c=%s runs/s %s cpu_ms %s forks_own_cpu_ms %s\n' "$kind" "$c" \
        "$(sed -n 's/.*runs\/s=\([0-9.]*\).*/\1/p' <<<"$out")" "$(per_run "$b0" "$b1" "$n")" \
        "$(sed -n 's/.*cpu_ms_per_run=\([0-9.]*\).*/\1/p' <<<"$out")" | tee -a "$rows"
}

echo "# forkratio: $n print(1) requests per round, $rounds rounds, $(nproc) cores, $(date -u +%FT%TZ)"
for c in $concs; do
    for _ in $(seq "$rounds"); do
        for b in "${builds[@]}"; do serve_round "$b" "$c"; done
        bare_round bare "$c"
        bare_round bare-child-compile "$c"
    done
done
echo "# medians: runs/s, machine CPU ms per run; ratio = runs/s / bare's, CPU / bare's"
median() { sort -n | awk '{v[NR]=$1} END{if (NR%2) print v[(NR+1)/2]; else printf "%.2f\n", (v[NR/2]+v[NR/2+1])/2}'; }
for c in $concs; do
    med() { awk -v k="$1" -v c="c=$c" -v f="$2" '$1==k && $2==c {for (i=3;i<NF;i++) if ($i==f) print $(i+1)}' "$rows" | median; }
    br=$(med bare runs/s) bc=$(med bare cpu_ms)
    for k in "${builds[@]}" bare bare-child-compile; do
        r=$(med "$k" runs/s) cpu=$(med "$k" cpu_ms)
        printf '%-24s c=%s runs/s %8s cpu_ms %6s  ratio %s  cpu x%s\n' "$k" "$c" "$r" "$cpu" \
            "$(awk -v a="$r" -v b="$br" 'BEGIN{printf "%.2f", a/b}')" \
            "$(awk -v a="$cpu" -v b="$bc" 'BEGIN{printf "%.2f", a/b}')"
    done
done
