#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Cold-run overhead of every backend over bare python, in one hyperfine run: `python3 -c CODE`
# (the baseline), then `execbox run -b NAME -c CODE` end to end for each backend usable here
# (subprocess, jail, gvisor, pyodide, docker; e2b needs E2B's service and is left out unless
# E2B_API_KEY is set). Medians and the ratio to the baseline are printed as one table.
# Usage: bench/backends.sh [EXECBOX] (default: build-release/execbox, else build/execbox).
# RUNS (default 10) runs per command; pyodide gets min(RUNS, 5): its start is seconds.
# docker: uses $DOCKER_HOST when set, else starts podman's service with tests/docker/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
exe=${1:-}
[[ -n $exe ]] || { [[ -x build-release/execbox ]] && exe=build-release/execbox || exe=build/execbox; }
command -v hyperfine >/dev/null || { echo "bench: hyperfine is not installed" >&2; exit 1; }
runs=${RUNS:-10}
code='print(6*7)'
out=$(mktemp -d /tmp/execbox-bench-backends.XXXXXX)
state=
cleanup() {
    [[ -n $state ]] && { bash tests/docker/setup.sh stop "$state" || true; rm -rf "$state"; }
    rm -rf "$out"
}
trap cleanup EXIT

# pyodide: the pinned Pyodide, installed once (npm ci with the committed lock file).
if [[ -z ${EXECBOX_PYODIDE_DIR:-} ]]; then
    export EXECBOX_PYODIDE_DIR=${TMPDIR:-/tmp}/execbox-pyodide
    lib/backends/pyodide/install.sh "$EXECBOX_PYODIDE_DIR" >&2 || true
fi
host=${DOCKER_HOST:-}
if [[ -z $host ]] && command -v podman >/dev/null && [[ $(id -u) -eq 0 ]]; then
    cache=${EXECBOX_TEST_CACHE:-/var/cache/execbox-test}
    mkdir -p "$cache"
    exec 9>"$cache/test.lock"
    flock 9
    state=$(mktemp -d /tmp/execbox-bench-docker.XXXXXX)
    host=$(bash tests/docker/setup.sh start "$state" | tail -n1) || host=
fi

# The baseline is the interpreter the backends run, as they run it: /usr/bin/python3 -B with
# an empty environment (a python3 earlier on PATH, or site hooks from the caller's environment,
# would measure something else).
cmds=(-n python "env -i /usr/bin/python3 -B -c '$code'")
names=(python)
add() { # NAME RUNS ARGS...
    local name=$1 n=$2
    shift 2
    if "$exe" check -b "$name" "$@" >/dev/null 2>&1; then
        cmds+=(-n "$name" "$exe run -b $name $* -t 120 -c '$code'")
        names+=("$name")
    else
        echo "bench: $name is not usable here: $("$exe" check -b "$name" "$@" 2>&1 | grep -m1 'required' || true)" >&2
    fi
}
add subprocess "$runs"
add jail "$runs"
add gvisor "$runs"
[[ -n $host ]] && add docker "$runs" --docker-host "$host"
[[ -n ${E2B_API_KEY:-} ]] && add e2b "$runs"
hyperfine -N --warmup 1 --runs "$runs" --export-json "$out/main.json" "${cmds[@]}" >&2
json=("$out/main.json")
# Pyodide separately, with fewer runs: seconds each.
if "$exe" check -b pyodide >/dev/null 2>&1; then
    prun=$((runs < 5 ? runs : 5))
    hyperfine -N --runs "$prun" --export-json "$out/pyodide.json" \
        -n pyodide "$exe run -b pyodide -t 300 -c '$code'" >&2
    json+=("$out/pyodide.json")
else
    echo "bench: pyodide is not usable here (lib/backends/pyodide/install.sh)" >&2
fi
python3 - "${json[@]}" <<'PY'
import json, statistics, sys
rows = []
for path in sys.argv[1:]:
    for r in json.load(open(path))["results"]:
        rows.append((r["command"], statistics.median(r["times"]), len(r["times"])))
base = next(m for c, m, _ in rows if c == "python")
print("| backend | median (ms) | overhead over python (ms) | ratio | runs |")
print("| --- | ---: | ---: | ---: | ---: |")
for c, m, n in rows:
    print(f"| {c} | {m * 1000:.1f} | {(m - base) * 1000:+.1f} | {m / base:.1f}x | {n} |")
PY
