#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds deploy/Containerfile with podman and checks the image: `execbox check` inside it
# (walls available in a container, or a degraded report that names each missing wall and why),
# and a run of Python with numpy, pandas and matplotlib.
#   image.sh SOURCE_DIR
# There is no registry to pull a base image from: the base is a Debian 12 minbase built here
# with debootstrap from the configured Debian mirror (tests/docker/build-image.sh, cached in
# $EXECBOX_TEST_CACHE like the docker backend's test image) and imported into a private podman
# storage; the build's apt-get reaches the same mirror through the host's network.
# Exit 77 (skip) only where podman or debootstrap cannot run.
set -euo pipefail
src=${1:?source dir}
cache=${EXECBOX_TEST_CACHE:-/var/cache/execbox-test}
store=$cache/deploy-storage
run=/run/execbox-deploy-test
tag=localhost/execbox:test
base=localhost/execbox-base:bookworm
skip() { echo "SKIP: $*" >&2; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "needs root (podman with runc and cgroupfs, as CI runs it)"
for t in podman runc debootstrap; do
    command -v "$t" >/dev/null || skip "'$t' is not installed (scripts/deps/docker.apt)"
done
mkdir -p "$cache" "$run"
exec 9>"$cache/deploy.lock"
flock 9
conf=$run/containers.conf
cat >"$conf" <<CONF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=16384:16384"]
log_driver = "k8s-file"
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"
CONF
pm() {
    CONTAINERS_CONF=$conf podman --root "$store" --runroot "$run/root" --tmpdir "$run/tmp" \
        --runtime runc --cgroup-manager cgroupfs --events-backend file "$@"
}
bash "$src/tests/docker/build-image.sh" "$cache"
if ! pm image exists "$base"; then
    pm import "$cache/rootfs.tar" "$base" >/dev/null
fi
t0=$(date +%s)
: >"$run/build.log"
# The build stage is tagged too, so that pruning below keeps its layers (the compilers and
# -dev packages) for the next build.
for target in build ""; do
    pm build --network host --build-arg BASE="$base" -f "$src/deploy/Containerfile" \
        ${target:+--target "$target"} -t "${target:+$tag-}${target:-$tag}" "$src" \
        >>"$run/build.log" 2>&1 || { tail -n 40 "$run/build.log" >&2; exit 1; }
done
echo "image built in $(( $(date +%s) - t0 ))s; size $(pm image inspect "$tag" --format '{{.Size}}') bytes"
# Earlier builds' layers that no tag uses any more: the cache keeps only what the next build
# can reuse.
pm image prune -f >/dev/null 2>&1 || true

fail() { echo "FAIL: $*" >&2; exit 1; }
# The privileges of deploy/kubernetes/deployment.yaml, in podman's words.
priv=(--cap-drop ALL --cap-add SYS_ADMIN,SETUID,SETGID,SETPCAP,SYS_CHROOT,KILL,DAC_OVERRIDE,FOWNER,CHOWN,NET_ADMIN
      --security-opt seccomp=unconfined --security-opt apparmor=unconfined
      --security-opt unmask=/proc/* --tmpfs /run/execbox --tmpfs /tmp --read-only)

# check_report ARGS...: `execbox check` in a container; prints the report, sets $status.
check_report() {
    local out rc
    set +e
    out=$(pm run --rm --network none "$@" "$tag" check 2>&1)
    rc=$?
    set -e
    echo "$out"
    grep -q '^backend jail' <<<"$out" || fail "no report from execbox check"
    status=$(sed -n 's/^ *status: //p' <<<"$out")
    [[ $status == ready || $status == degraded || $status == unusable ]] || fail "no status line"
    # Honest: every missing wall says why (a detail after its name).
    if grep -E '^\s+MISS' <<<"$out" | grep -Eqv '^\s+MISS\s+\S.*\s{2,}\S'; then
        fail "a missing wall without a reason"
    fi
    if [[ $status == ready && $rc -ne 0 ]] || [[ $status != ready && $rc -eq 0 ]]; then
        fail "check exited $rc with status $status"
    fi
}

echo "== execbox check in a container with the Deployment's privileges"
check_report "${priv[@]}"
echo "== ... and with the cgroup tree writable (--cgroupns host, /sys/fs/cgroup rw)"
cg=(--cgroupns host -v /sys/fs/cgroup:/sys/fs/cgroup:rw)
check_report "${priv[@]}" "${cg[@]}"
cg_status=$status

echo "== execbox run of numpy, pandas and matplotlib in it"
code='import numpy as np, pandas as pd, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
df = pd.DataFrame({"x": np.arange(5)})
plt.plot(df.x, df.x ** 2)
plt.savefig("/workspace/p.png")
print(int(df.x.sum()), np.__version__ > "1")'
# Missing walls, if any, are named in the result's "degraded".
degraded=()
[[ $cg_status == ready ]] || degraded=(--allow-degraded)
res=$(pm run --rm --network none "${priv[@]}" "${cg[@]}" "$tag" run "${degraded[@]}" --json \
    -t 60 -c "$code" 2>&1) || true
echo "$res"
python3 - "$res" "$cg_status" <<'PY'
import json, sys
r = json.loads(sys.argv[1].strip().splitlines()[-1])
assert r["exit_code"] == 0 and r["stdout"] == "10 True\n", r
assert [f["path"] for f in r["files"]] == ["p.png"], r["files"]
assert r["backend"] == "jail", r
assert (sys.argv[2] == "ready") == (not r.get("degraded")), r
print("run ok; degraded walls:", r.get("degraded", []))
PY

echo "== the image's server answers /v1/health and drains on SIGTERM"
name=execbox-deploy-test-$$
pm run -d --name "$name" --network host -e EXECBOX_TOKEN=t "${priv[@]}" "${cg[@]}" "$tag" serve \
    --listen 127.0.0.1:18931 "${degraded[@]}" --drain-grace 1 >/dev/null
trap 'pm rm -f "$name" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 100); do
    curl -fsS http://127.0.0.1:18931/v1/health >/dev/null 2>&1 && break
    sleep 0.1
done
curl -fsS http://127.0.0.1:18931/v1/health || fail "no health from the container"
echo
pm stop -t 20 "$name" >/dev/null
st=$(pm inspect "$name" --format '{{.State.ExitCode}}')
[[ $st == 0 ]] || { pm logs "$name" | tail -n 20 >&2; fail "serve exited $st after SIGTERM"; }
echo "deploy image: ok"
