#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Scale-out on this machine: requests/s through HAProxy (the shipped deploy/haproxy/haproxy.cfg,
# addresses rewritten to loopback) in front of 1, 2 and 3 `execbox serve` instances, and the
# latency the remote backend's hop adds (a `serve --backend remote` in front of one instance,
# against that instance directly, in alternating pairs). wrk at concurrency 32 for the levels,
# the program print(6*7) in Python; ROUNDS rounds interleaved, medians reported, ratios against
# 1 instance and against the direct path measured in the same run.
# On one machine every instance shares the same cores: more instances cannot add CPU, so the
# figures show the balancer's and the hop's cost, not the scaling of a real cluster.
# Usage: bench/scaleout.sh [SECONDS_PER_MEASURE]   Environment: EXECBOX, BACKEND (default
# jail), ROUNDS (default 3), WORKERS per instance (default: the number of cores, as each
# instance would run on a machine of its own).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
rounds=${ROUNDS:-3}
backend=${BACKEND:-jail}
bin=${EXECBOX:-}
if [[ -z "$bin" ]]; then
    if [[ -x build-release/execbox ]]; then bin=build-release/execbox; else bin=build/execbox; fi
fi
for t in wrk haproxy; do
    command -v $t >/dev/null || { echo "bench/scaleout.sh: $t is missing (scripts/deps)" >&2; exit 1; }
done
cores=$(nproc)
tmp=$(mktemp -d /tmp/scaleout-bench.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_listening() { # LOGFILE
    for _ in $(seq 200); do
        grep -q '"event":"listening"' "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    cat "$1" >&2
    return 1
}
ports=()
for i in 1 2 3; do
    p=$(free_port)
    ports+=("$p")
    w=${WORKERS:-$cores}
    "$bin" serve --backend "$backend" --listen "127.0.0.1:$p" --workers "$w" --queue 256 \
        2>"$tmp/s$i.log" &
    pids+=($!)
    wait_listening "$tmp/s$i.log"
done
ha_start() { # N: HAProxy with the first N instances; sets ha_pid, ha_port
    ha_port=$(free_port)
    awk -v front="$ha_port" -v n="$1" -v p1="${ports[0]}" -v p2="${ports[1]}" -v p3="${ports[2]}" '
        /^[ \t]*bind :8080[ \t]*$/ { sub(":8080", "127.0.0.1:" front) }
        /^[ \t]*server / { k++; if (k > n) next; split(p1 " " p2 " " p3, ps, " "); $3 = "127.0.0.1:" ps[k] }
        /^[ \t]*log stdout/ { next }
        { print }' deploy/haproxy/haproxy.cfg >"$tmp/ha.cfg"
    haproxy -db -f "$tmp/ha.cfg" >"$tmp/ha.log" 2>&1 &
    ha_pid=$!
    for _ in $(seq 100); do
        curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ha_port/v1/health" 2>/dev/null |
            grep -q 200 && break
        sleep 0.1
    done
    sleep 2.5 # rise 2 x inter 1s: every listed instance in
}
measure() { # URL CONCURRENCY -> "rps p50 p99 bad"
    local r line
    r=$(wrk -t"$(( $2 < cores ? $2 : cores ))" -c"$2" -d"${secs}s" --timeout 30s --latency \
        -s bench/serve.lua "$1")
    line=$(grep '^BENCH' <<<"$r")
    echo "$(awk '/^Requests\/sec/ {print $2}' <<<"$r") $(sed 's/.*p50_ms=\([0-9.]*\).*/\1/' <<<"$line") $(sed 's/.*p99_ms=\([0-9.]*\).*/\1/' <<<"$line") $(( $(sed 's/.*bad=\([0-9]*\).*/\1/' <<<"$line") + $(sed 's/.*socket_errors=\([0-9]*\).*/\1/' <<<"$line") ))"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# the remote hop: a front `serve --backend remote` to instance 1
fp=$(free_port)
"$bin" serve --backend remote --remote "http://127.0.0.1:${ports[0]}" --listen "127.0.0.1:$fp" \
    --workers "$cores" --queue 256 2>"$tmp/front.log" &
pids+=($!)
wait_listening "$tmp/front.log"

wrk -t1 -c1 -d2s -s bench/serve.lua "http://127.0.0.1:${ports[0]}" >/dev/null # warm-up
declare -A rps p50 p99 errs
for round in $(seq "$rounds"); do
    read -r a b c d < <(measure "http://127.0.0.1:${ports[0]}" 32)
    rps[direct]+="$a "; p50[direct]+="$b "; p99[direct]+="$c "; errs[direct]=$(( ${errs[direct]:-0} + d ))
    for n in 1 2 3; do
        ha_start "$n"
        read -r a b c d < <(measure "http://127.0.0.1:$ha_port" 32)
        rps[$n]+="$a "; p50[$n]+="$b "; p99[$n]+="$c "; errs[$n]=$(( ${errs[$n]:-0} + d ))
        kill "$ha_pid"; wait "$ha_pid" 2>/dev/null || true
    done
done
# The hop, paired: one request direct, one through the front, alternately on kept-alive
# connections, so that both see the same load on this shared machine; the median of the
# pairs' differences is the hop's cost.
hop=$(python3 - "${ports[0]}" "$fp" "${PAIRS:-200}" <<'PY'
import http.client, json, statistics, sys, time
direct, front, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
body = json.dumps({"code": "print(6*7)"})
conns = {p: http.client.HTTPConnection("127.0.0.1", p, timeout=60) for p in (direct, front)}
def one(p):
    t = time.perf_counter()
    conns[p].request("POST", "/v1/execute", body=body)
    r = conns[p].getresponse()
    ok = r.status == 200 and json.loads(r.read())["stdout"] == "42\n"
    return (time.perf_counter() - t) * 1e3, ok
d, h, bad = [], [], 0
for i in range(n):
    order = (direct, front) if i % 2 == 0 else (front, direct)
    res = {p: one(p) for p in order}
    d.append(res[direct][0]); h.append(res[front][0])
    bad += (not res[direct][1]) + (not res[front][1])
diff = statistics.median(b - a for a, b in zip(d, h))
print(f"{statistics.median(d):.2f} {statistics.median(h):.2f} {diff:.2f} {bad}")
PY
)
read -r hd hh hdiff herr <<<"$hop"
mkdir -p bench/results
out=bench/results/scaleout-$(date -u +%Y%m%dT%H%M%SZ).txt
{
    echo "scale-out benchmark: $(date -u +%FT%TZ), $cores cores shared by every instance, backend $backend,"
    echo "workers per instance ${WORKERS:-$cores}, wrk -c32 ${secs}s x $rounds rounds (medians), program print(6*7)"
    base=$(tr ' ' '\n' <<<"${rps[1]}" | sed '/^$/d' | median)
    printf '%-22s %10s %10s %10s %8s %8s\n' "through HAProxy" "req/s" "p50_ms" "p99_ms" "vs 1" errors
    for n in direct 1 2 3; do
        r=$(tr ' ' '\n' <<<"${rps[$n]}" | sed '/^$/d' | median)
        label="$n instance(s)"
        [[ $n == direct ]] && label="1, no HAProxy"
        printf '%-22s %10.1f %10.2f %10.2f %8.2f %8s\n' "$label" "$r" \
            "$(tr ' ' '\n' <<<"${p50[$n]}" | sed '/^$/d' | median)" \
            "$(tr ' ' '\n' <<<"${p99[$n]}" | sed '/^$/d' | median)" \
            "$(awk -v a="$r" -v b="$base" 'BEGIN {print a / b}')" "${errs[$n]}"
    done
    echo "remote hop, ${PAIRS:-200} alternating pairs at concurrency 1: median direct ${hd} ms," \
         "through serve --backend remote ${hh} ms (x$(awk -v a="$hh" -v b="$hd" 'BEGIN {printf "%.2f", a / b}'));" \
         "median of the pairs' differences +${hdiff} ms; errors $herr"
} | tee "$out"
echo "saved to $out"
