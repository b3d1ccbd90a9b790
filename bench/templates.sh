#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Templates against cold runs and against one-interpreter-per-sandbox warm starts (--no-templates),
# all through `execbox serve --pool 8 --preload numpy,pandas` on loopback, in one run:
#  - p50/p99 of print(6*7), paced (one request at a time, 50 ms apart: the machine idle between);
#  - p50 of a pandas describe(), paced;
#  - runs/s at concurrency 1, 2 and 8 for print(1) and for the pandas cell;
#  - CPU time per run (the whole machine's busy time over the requests, from /proc/stat);
#  - the server's RSS before and after 10,000 requests (templates only);
#  - the limit: a bare fork+run+reap of the same preloaded interpreter, no walls (forklimit.py).
# Usage: bench/templates.sh   Environment: RUNS (requests per level, default 400), BUILD.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-release}
[[ -x $build/execbox ]] || build=build
bin=$build/execbox
n=${RUNS:-400}
big=${BIG:-10000}
. bench/lib.sh
bench_setup tpl
serve() { bench_serve "$log" "$bin" --queue 512 --workers 8 "$@"; }
stop() { bench_stop; }
rss() { awk '/^VmRSS/{print $2}' "/proc/$1/status"; }
warmup() { bench_warmup "$client" 8 "$1" "$2"; } # the template (or sandboxes) ready
hz=$(getconf CLK_TCK)
pbody='{"code": "print(6*7)"}'
pexp='"stdout":"42\n"'
obody='{"code": "print(1)"}'
oexp='"stdout":"1\n"'
pcode='import pandas as pd; print(pd.DataFrame({"a": range(100)}).describe().loc["mean", "a"])'
dbody='{"code": "import pandas as pd; print(pd.DataFrame({\"a\": range(100)}).describe().loc[\"mean\", \"a\"])"}'
dexp='"stdout":"49.5\n"'
echo "# templates vs warm-from-nothing vs cold, serve --pool 8 --preload numpy,pandas,"
echo "# $n requests per level, $(nproc) cores, $(date -u +%FT%TZ), $($bin --version 2>/dev/null || true)"
printf '%-10s %-28s %s\n' mode measure result
for mode in cold nothing template; do
    case $mode in
    cold) serve ;;
    nothing) serve --pool 8 --preload numpy,pandas --no-templates ;;
    template) serve --pool 8 --preload numpy,pandas ;;
    esac
    warmup "$pbody" "$pexp"
    r=$(PACE_MS=50 "$client" "$port" 60 1 "$pbody" "$pexp")
    printf '%-10s %-28s %s\n' "$mode" "print paced c=1" "$r"
    warmup "$dbody" "$dexp"
    r=$(PACE_MS=100 "$client" "$port" 30 1 "$dbody" "$dexp")
    printf '%-10s %-28s %s\n' "$mode" "pandas paced c=1" "$r"
    for c in 1 2 8; do
        warmup "$obody" "$oexp"
        b0=$(bench_busy)
        r=$("$client" "$port" "$n" "$c" "$obody" "$oexp")
        b1=$(bench_busy)
        cpu=$(awk -v a="$b0" -v b="$b1" -v n="$n" -v hz="$hz" 'BEGIN{printf "%.2f", (b-a)*1000/hz/n}')
        printf '%-10s %-28s %s cpu_ms_per_run=%s\n' "$mode" "print(1) c=$c" "$r" "$cpu"
    done
    for c in 1 2 8; do
        warmup "$dbody" "$dexp"
        m=$((n / 4))
        b0=$(bench_busy)
        r=$("$client" "$port" "$m" "$c" "$dbody" "$dexp")
        b1=$(bench_busy)
        cpu=$(awk -v a="$b0" -v b="$b1" -v n="$m" -v hz="$hz" 'BEGIN{printf "%.2f", (b-a)*1000/hz/n}')
        printf '%-10s %-28s %s cpu_ms_per_run=%s\n' "$mode" "pandas c=$c" "$r" "$cpu"
    done
    if [[ $mode == template ]]; then
        before=$(rss "$pid")
        r=$("$client" "$port" "$big" 8 "$obody" "$oexp")
        after=$(rss "$pid")
        printf '%-10s %-28s %s rss_kb_before=%s rss_kb_after=%s templates_started=%s template_memory_bytes=%s\n' \
            "$mode" "print(1) x$big c=8" "$r" "$before" "$after" \
            "$(bench_metric execbox_templates_started_total)" "$(bench_metric execbox_template_memory_bytes)"
    fi
    stop
done
for c in 1 2 8; do
    printf '%-10s %-28s %s\n' limit "bare fork print(1) c=$c" \
        "$(/usr/bin/python3 bench/forklimit.py numpy,pandas "$c" "$n" 'print(1)')"
done
for c in 1 2 8; do
    printf '%-10s %-28s %s\n' limit "bare fork pandas c=$c" \
        "$(/usr/bin/python3 bench/forklimit.py numpy,pandas "$c" $((n / 4)) "$pcode")"
done
