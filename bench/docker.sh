#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Per-run latency of the docker backend against the subprocess backend (and the jail, when it
# is compiled in and ready here), in the same hyperfine run: `execbox run` of a one-line Python
# program, end to end (engine API calls, container create/start/remove included).
# Usage: bench/docker.sh [EXECBOX] (default: build-release/execbox, else build/execbox).
# Uses $DOCKER_HOST when set; otherwise starts podman's service with tests/docker/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
exe=${1:-}
[[ -n $exe ]] || { [[ -x build-release/execbox ]] && exe=build-release/execbox || exe=build/execbox; }
command -v hyperfine >/dev/null || { echo "bench: hyperfine is not installed" >&2; exit 1; }
state=
cleanup() { [[ -n $state ]] && { bash tests/docker/setup.sh stop "$state"; rm -rf "$state"; }; }
trap cleanup EXIT
host=${DOCKER_HOST:-}
if [[ -z $host ]]; then
    # One test engine per machine at a time: the integration test takes the same lock.
    cache=${EXECBOX_TEST_CACHE:-/var/cache/execbox-test}
    mkdir -p "$cache"
    exec 9>"$cache/test.lock"
    flock 9
    state=$(mktemp -d /tmp/execbox-bench-docker.XXXXXX)
    host=$(bash tests/docker/setup.sh start "$state" | tail -n1)
fi
code='print(6*7)'
cmds=(-n subprocess "$exe run -b subprocess -c '$code'")
if "$exe" check -b jail >/dev/null 2>&1; then
    cmds+=(-n jail "$exe run -b jail -c '$code'")
else
    echo "bench: jail not compiled in or not ready here; comparing with subprocess only" >&2
fi
cmds+=(-n docker "$exe run -b docker --docker-host $host -c '$code'")
"$exe" check -b docker --docker-host "$host" | sed -n '1,2p'
hyperfine -N --warmup 2 --runs "${RUNS:-20}" --export-markdown "${OUT:-/dev/stdout}" "${cmds[@]}"
