#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmarks `execbox serve` with wrk over loopback: throughput and p50/p99 latency of a trivial
# program at concurrency 1, 8 and 64, then exactly 10,000 requests that must all succeed, and
# the server's resident memory before and after (wrk for the levels, bench/serve_client.c for
# the exact count). Usage: bench/serve.sh [SECONDS_PER_LEVEL]
# Environment: EXECBOX (the binary; default build-release/execbox, else build/execbox),
# BACKEND (default: the default backend), TOTAL (default 10000).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
total=${TOTAL:-10000}
bin=${EXECBOX:-}
if [[ -z "$bin" ]]; then
    if [[ -x build-release/execbox ]]; then bin=build-release/execbox; else bin=build/execbox; fi
fi
command -v wrk >/dev/null || { echo "bench/serve.sh: wrk is missing (scripts/deps/serve.apt)" >&2; exit 1; }
[[ -x "$bin" ]] || { echo "bench/serve.sh: no $bin; run 'make release' first" >&2; exit 1; }
mkdir -p bench/results
out=bench/results/serve-$(date -u +%Y%m%dT%H%M%SZ).txt
cores=$(nproc)
args=(--queue 256)
[[ -n "${BACKEND:-}" ]] && args+=(--backend "$BACKEND")
. bench/lib.sh
bench_setup serve-bench
bench_serve "$log" "$bin" "${args[@]}"
url=http://$addr
rss() { awk '/^VmRSS/ {print $2 " kB"}' /proc/$pid/status; }
backend=$(curl -s "$url/v1/health" | sed 's/.*"backend":"\([^"]*\)".*/\1/')
{
    echo "execbox serve benchmark: $(date -u +%FT%TZ), $cores cores, backend $backend,"
    echo "workers $cores (default), queue 256, program: print(6*7) in python"
    echo "server RSS at start: $(rss)"
    # warm-up (page cache, interpreter)
    wrk -t1 -c1 -d2s -s bench/serve.lua "$url" >/dev/null
    echo "server RSS after warm-up: $(rss)"
    printf '%-12s %10s %10s %10s %8s %8s\n' concurrency req/s p50_ms p99_ms requests errors
    for c in 1 8 64; do
        t=$((c < cores ? c : cores))
        r=$(wrk -t"$t" -c"$c" -d"${secs}s" --timeout 30s --latency -s bench/serve.lua "$url")
        rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$r")
        line=$(grep '^BENCH' <<<"$r")
        n=$(sed 's/.*responses=\([0-9]*\).*/\1/' <<<"$line")
        bad=$(sed 's/.*bad=\([0-9]*\).*/\1/' <<<"$line")
        serr=$(sed 's/.*socket_errors=\([0-9]*\).*/\1/' <<<"$line")
        p50=$(sed 's/.*p50_ms=\([0-9.]*\).*/\1/' <<<"$line")
        p99=$(sed 's/.*p99_ms=\([0-9.]*\).*/\1/' <<<"$line")
        printf '%-12s %10s %10s %10s %8s %8s\n' "$c" "$rps" "$p50" "$p99" "$n" $((bad + serr))
    done
    echo "server RSS after the levels: $(rss)"
    # Exactly $total requests over 8 keep-alive connections, every answer checked.
    r=$("$client" "$port" "$total" 8) || true
    echo "$total requests at concurrency 8 (bench/serve_client.c): $r"
    echo "server RSS after $total more requests: $(rss)"
    curl -s "$url/metrics" | grep -E '^execbox_(http_requests_total|runs_total)' | sed 's/^/  /'
} | tee "$out"
kill -TERM $pid
wait $pid && echo "server drained and exited 0" | tee -a "$out"
pid=
echo "saved to $out"
