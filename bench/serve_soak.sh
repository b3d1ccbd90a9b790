#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Soak of `execbox serve` over loopback: exactly TOTAL requests (default 10,000) at concurrency
# CONC (default 64) from bench/serve_client.c, every answer checked: "ok" (200 with the
# program's output), "busy" (429/503 with Retry-After: answered), "wrong" or "lost" (must be 0).
# The server's resident memory at start, after a warm-up of WARMUP requests (default 1,000)
# and after the soak (flat after warm-up is the goal). Not part of `make test`.
# Usage: bench/serve_soak.sh    Environment: EXECBOX (the binary; default build-release/execbox,
# else build/execbox), BACKEND (default subprocess; jail works too), TOTAL, CONC, WARMUP,
# QUEUE (default 64), WORKERS (default: cores).
set -euo pipefail
cd "$(dirname "$0")/.."
total=${TOTAL:-10000}
conc=${CONC:-64}
warmup=${WARMUP:-1000}
queue=${QUEUE:-64}
backend=${BACKEND:-subprocess}
bin=${EXECBOX:-}
if [[ -z "$bin" ]]; then
    if [[ -x build-release/execbox ]]; then bin=build-release/execbox; else bin=build/execbox; fi
fi
[[ -x "$bin" ]] || { echo "bench/serve_soak.sh: no $bin; build first" >&2; exit 1; }
mkdir -p bench/results
out=bench/results/serve-soak-$(date -u +%Y%m%dT%H%M%SZ).txt
args=(--queue "$queue" --backend "$backend")
[[ -n "${WORKERS:-}" ]] && args+=(--workers "$WORKERS")
. bench/lib.sh
bench_setup serve-soak
bench_serve "$log" "$bin" "${args[@]}"
rss() { awk '/^VmRSS/ {print $2}' /proc/$pid/status; }
status=0
{
    echo "execbox serve soak: $(date -u +%FT%TZ), $(nproc) cores, backend $backend, queue $queue,"
    echo "concurrency $conc, program: print(6*7) in python"
    start=$(rss)
    echo "server RSS at start: $start kB"
    r=$("$client" "$port" "$warmup" "$conc") || status=1
    echo "warm-up, $warmup requests: $r"
    warm=$(rss)
    echo "server RSS after warm-up: $warm kB"
    r=$("$client" "$port" "$total" "$conc") || status=1
    echo "soak, $total requests: $r"
    end=$(rss)
    echo "server RSS after the soak: $end kB (after warm-up: $warm kB; change $((end - warm)) kB)"
    curl -s "http://$addr/metrics" | grep -E '^execbox_(http_requests_total|runs_total)' | sed 's/^/  /'
} >"$out"
cat "$out"
kill -TERM $pid
wait $pid && echo "server drained and exited 0" | tee -a "$out"
pid=
echo "saved to $out"
exit $status
