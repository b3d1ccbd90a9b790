#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The docker backend's test engine: podman's Docker-compatible service on a private socket.
#   setup.sh start STATE_DIR   starts it (runc, cgroupfs, explicit ulimits), makes sure the test
#                              image exists, and prints the DOCKER_HOST to use
#   setup.sh start-runsc STATE_DIR  after start: a second service on the same storage whose
#                              default runtime is gVisor's runsc (podman's Docker API ignores a
#                              per-container runtime), with runsc's --network=none (its default,
#                              sandbox, refuses podman's netns) and --platform=ptrace; prints its
#                              DOCKER_HOST, or exits 77 without runsc
#   setup.sh stop STATE_DIR    stops both and removes the run state
# Exit 77 (skip) with the reason only where podman itself cannot run. The image is built once
# per machine (debootstrap, see build-image.sh) and kept, with podman's storage, under
# $EXECBOX_TEST_CACHE (default /var/cache/execbox-test), so repeated runs start in seconds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:?start|stop}
state=${2:?state dir}
cache=${EXECBOX_TEST_CACHE:-/var/cache/execbox-test}
image=execbox-python:bookworm
# podman records its run directories in its database: they stay the same for one storage root
# (runs are serialised by the test's lock; the run state is wiped at stop).
run_dir=${EXECBOX_TEST_RUN:-/run/execbox-test}

driver=${EXECBOX_TEST_STORAGE_DRIVER:-overlay}
podman_args() {
    # Each storage driver keeps its own root (the driver is recorded in the storage).
    # overlay is the packaged default (storage.conf): not named, as podman's database records
    # the driver exactly as it was given.
    if [[ $driver == overlay ]]; then
        printf '%s\n' --root "$cache/storage"
    else
        printf '%s\n' --root "$cache/storage-$driver" --storage-driver "$driver"
    fi
    printf '%s\n' --runroot "$run_dir/root" --tmpdir "$run_dir/tmp" --runtime runc \
        --cgroup-manager cgroupfs --events-backend file
}
podman_cmd() {
    local args
    mapfile -t args < <(podman_args)
    CONTAINERS_CONF=$state/containers.conf podman "${args[@]}" "$@"
}

skip() { echo "docker test engine: $*" >&2; exit 77; }

stop() {
    if [[ -s $state/runsc.pid ]]; then
        kill -TERM "$(cat "$state/runsc.pid")" 2>/dev/null || true
        rm -f "$state/runsc.pid"
    fi
    if [[ -s $state/pid ]]; then
        pid=$(cat "$state/pid")
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        rm -f "$state/pid"
    fi
    # Leftover mounts of the private run state go with it.
    if [[ -d $run_dir ]]; then
        { grep -F " $run_dir/" /proc/self/mounts || true; } | awk '{print $2}' | sort -r |
            while read -r m; do umount -l "$m" 2>/dev/null || true; done
        rm -rf "$run_dir"
    fi
}

if [[ $cmd == stop ]]; then
    stop
    exit 0
fi

if [[ $cmd == start-runsc ]]; then
    command -v runsc >/dev/null || skip "runsc is not installed (scripts/deps/gvisor.apt)"
    [[ -s $state/driver ]] || { echo "docker test engine: start-runsc needs start first" >&2; exit 1; }
    driver=$(cat "$state/driver")
    sed 's/^runtime = "runc"$/runtime = "runsc"/' "$state/containers.conf" >"$state/runsc.conf"
    printf '[engine.runtimes]\nrunsc = ["%s"]\n' "$(command -v runsc)" >>"$state/runsc.conf"
    sock=$state/runsc.sock
    rm -f "$sock"
    mapfile -t args < <(podman_args)
    args=("${args[@]/#runc/$(command -v runsc)}")
    setsid bash -c 'exec "$@"' _ env CONTAINERS_CONF="$state/runsc.conf" podman "${args[@]}" \
        --runtime-flag network=none --runtime-flag platform=ptrace \
        system service --time 0 "unix://$sock" </dev/null >"$state/runsc-service.log" 2>&1 &
    echo $! >"$state/runsc.pid"
    for _ in $(seq 100); do
        curl -sf --max-time 2 --unix-socket "$sock" http://d/_ping >/dev/null && break
        sleep 0.1
    done
    curl -sf --max-time 2 --unix-socket "$sock" http://d/_ping >/dev/null ||
        { tail -n 5 "$state/runsc-service.log" >&2; skip "podman's service with runsc did not come up"; }
    echo "unix://$sock"
    exit 0
fi

if [[ -s $run_dir/service.pid ]] && kill -0 "$(cat "$run_dir/service.pid")" 2>/dev/null; then
    echo "docker test engine: another one runs already (pid $(cat "$run_dir/service.pid")); callers serialise on $cache/test.lock" >&2
    exit 1
fi
[[ $(id -u) -eq 0 ]] || skip "needs root (podman with runc and cgroupfs, as CI runs it)"
command -v podman >/dev/null || skip "podman is not installed (scripts/deps/docker.apt)"
command -v runc >/dev/null || skip "runc is not installed (scripts/deps/docker.apt)"
mkdir -p "$state" "$cache"
# Explicit ulimits and settings: the engine's default ulimits (nproc 4194304, nofile 1048576)
# cannot be applied on every host, there is no systemd (cgroupfs, file events, k8s-file logs).
cat >"$state/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=16384:16384"]
log_driver = "k8s-file"
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"
CONF
# Can podman run a container at all here? (An info call touches storage and the runtime.)
# overlay where the kernel and the backing filesystem allow it (not on overlayfs), else vfs.
if ! podman_cmd info >"$state/info-$driver.log" 2>&1; then
    echo "docker test engine: $driver storage unusable, trying vfs: $(tail -n 1 "$state/info-$driver.log")" >&2
    driver=vfs
    rm -rf "$run_dir"
    podman_cmd info >"$state/info.log" 2>&1 ||
        skip "podman cannot run here: $(tail -n 3 "$state/info.log")"
fi

echo "$driver" >"$state/driver"
sock=$state/podman.sock
rm -f "$sock"
mapfile -t args < <(podman_args)
setsid bash -c 'exec "$@"' _ env CONTAINERS_CONF="$state/containers.conf" podman "${args[@]}" \
    system service --time 0 "unix://$sock" </dev/null >"$state/service.log" 2>&1 &
echo $! >"$state/pid"
mkdir -p "$run_dir"
echo $! >"$run_dir/service.pid"
for _ in $(seq 100); do
    [[ -S $sock ]] && curl -sf --max-time 2 --unix-socket "$sock" http://d/_ping >/dev/null && break
    sleep 0.1
done
if ! curl -sf --max-time 2 --unix-socket "$sock" http://d/_ping >/dev/null; then
    tail -n 5 "$state/service.log" >&2
    stop
    skip "podman system service did not come up"
fi

# Remove what an interrupted earlier run may have left.
for c in $(podman_cmd ps -a -q --filter label=org.execbox.run 2>/dev/null); do
    podman_cmd rm -f "$c" >/dev/null 2>&1 || true
done

if ! podman_cmd image exists "$image"; then
    start=$(date +%s)
    (
        flock 9
        "$here/build-image.sh" "$cache"
    ) 9>"$cache/build.lock"
    podman_cmd import --change 'CMD ["/usr/bin/python3"]' "$cache/rootfs.tar" "$image" >"$state/import.log" 2>&1
    echo "docker test engine: image $image ready in $(( $(date +%s) - start ))s" >&2
fi
echo "unix://$sock"
