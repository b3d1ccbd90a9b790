# SPDX-License-Identifier: MIT
# bench/lib.sh - what the serve benchmarks share; sourced, not run.

# bench_setup NAME: a fresh folder $work (/tmp/NAME.XXXXXX) holding the serve client $client
# (bench/serve_client.c, built) and the server's log $log; on exit (bench_cleanup) the server
# bench_serve started is killed and the folder removed. A script with more to undo sets its own
# EXIT trap and calls bench_cleanup from it.
bench_setup() {
    work=$(mktemp -d "/tmp/$1.XXXXXX")
    client=$work/client
    log=$work/serve.log
    pid=
    trap bench_cleanup EXIT
    cc -O2 -pthread bench/serve_client.c -o "$client"
}
bench_cleanup() { # (under set -e: a server already gone must not stop the removal)
    if [[ -n ${pid:-} ]]; then kill "$pid" 2>/dev/null || true; fi
    wait 2>/dev/null || true
    rm -rf "$work"
}

# bench_libpath BIN: the library search path that runs BIN with the libexecbox of its own build
# folder (BIN's folder's lib/) first. A build folder's programs find the library through a RUNPATH
# naming the folder they were built in: a copy of a build (a baseline kept before a change) would
# otherwise run the new build's library. Use: LD_LIBRARY_PATH=$(bench_libpath "$bin") "$bin" ...
bench_libpath() {
    echo "$(cd "$(dirname "$1")" && pwd)/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

# bench_serve LOG BIN ARGS...: starts `BIN serve --listen 127.0.0.1:0 ARGS...` in the background,
# its JSON log in LOG; sets pid, addr (host:port) and port once it listens, or exits with the
# log when it does not within 20 s.
bench_serve() {
    local log=$1 bin=$2
    shift 2
    : >"$log"
    LD_LIBRARY_PATH=$(bench_libpath "$bin") "$bin" serve --listen 127.0.0.1:0 "$@" 2>"$log" &
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

# bench_bwrap: bubblewrap's command line for the cold-start baseline (bench/jail.sh,
# bench/cold_cpu.sh), the program to run appended: the namespaces execbox's jail makes, the host's
# /usr read-only with the merged-/usr links, /etc read-only, its own /proc, /dev, /tmp and
# /workspace, the environment cleared but for what a run gets, every capability dropped.
bench_bwrap=(/usr/bin/bwrap --unshare-all --die-with-parent --new-session --cap-drop ALL
    --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64
    --symlink usr/sbin /sbin --ro-bind /etc /etc --proc /proc --dev /dev --tmpfs /tmp
    --tmpfs /workspace --chdir /workspace --clearenv --setenv PATH /usr/bin:/bin
    --setenv HOME /workspace --setenv TMPDIR /tmp)

# bench_busy: the machine's busy time so far, in jiffies (user, nice, system, irq, softirq from
# /proc/stat); the difference over a benchmark, times 1000 / CLK_TCK, is its CPU in ms.
bench_busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }

# bench_metric NAME: the value of one /metrics line of the server bench_serve started.
bench_metric() { curl -s "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1==m{print $2}'; }

# bench_warmup CLIENT N BODY EXPECTED: N sequential requests (the template, or the sandboxes,
# ready), then up to 20 s for the pool to hold 8 ready sandboxes.
bench_warmup() {
    "$1" "$port" "$2" 1 "$3" "$4" >/dev/null || true
    for _ in $(seq 200); do
        [[ $(bench_metric execbox_pool_ready) -ge 8 ]] 2>/dev/null && return
        sleep 0.1
    done
}
