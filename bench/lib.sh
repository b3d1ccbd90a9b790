# SPDX-License-Identifier: MIT
# bench/lib.sh - what the serve benchmarks share; sourced, not run.

# bench_serve LOG BIN ARGS...: starts `BIN serve --listen 127.0.0.1:0 ARGS...` in the background,
# its JSON log in LOG; sets pid, addr (host:port) and port once it listens, or exits with the
# log when it does not within 20 s.
bench_serve() {
    local log=$1 bin=$2
    shift 2
    : >"$log"
    "$bin" serve --listen 127.0.0.1:0 "$@" 2>"$log" &
    pid=$!
    addr=
    for _ in $(seq 200); do
        addr=$(grep -o '"event":"listening","message":"[^"]*"' "$log" | sed 's/.*"message":"//; s/"$//' || true)
        [[ -n $addr ]] && { port=${addr##*:}; return 0; }
        sleep 0.1
    done
    echo "server did not start:" >&2
    cat "$log" >&2
    exit 1
}

# bench_stop: SIGTERM to the server bench_serve started (it drains), and waits for it.
bench_stop() {
    kill -TERM "$pid"
    wait "$pid" || true
    pid=
}
