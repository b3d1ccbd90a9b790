#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The cost of execbox itself on the subprocess backend: `execbox run -b subprocess -c pass`
# against bare `/usr/bin/python3 -c pass`, timed by hyperfine in the same run. Prints both
# medians, the median overhead in ms and the ratio. Needs the release build (make release).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
execbox=${EXECBOX:-$root/build-release/execbox}
runs=${BENCH_RUNS:-200}
out=$root/bench/results
mkdir -p "$out"
json=$out/subprocess.json

command -v hyperfine >/dev/null || { echo "hyperfine is missing (apt-get install hyperfine)" >&2; exit 1; }
[ -x "$execbox" ] || { echo "$execbox is missing: run 'make release' first" >&2; exit 1; }
[ -x /usr/bin/python3 ] || { echo "/usr/bin/python3 is missing" >&2; exit 1; }

# -N: no intermediate shell, so neither command pays for one. stderr is dropped: execbox
# warns there on every subprocess run.
hyperfine -N --warmup 10 --runs "$runs" --style basic --export-json "$json" \
    --command-name python3 "/usr/bin/python3 -c pass" \
    --command-name execbox "$execbox run -b subprocess -c pass" \
    --output=null >/dev/null 2>&1 || {
    # Older hyperfine without -N/--output: go through the shell instead.
    hyperfine --warmup 10 --runs "$runs" --style basic --export-json "$json" \
        --command-name python3 "/usr/bin/python3 -c pass" \
        --command-name execbox "$execbox run -b subprocess -c pass 2>/dev/null" >/dev/null
}

python3 - "$json" <<'PY'
import json, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
py, eb = res["python3"], res["execbox"]
for name, r in (("python3 -c pass", py), ("execbox run -b subprocess -c pass", eb)):
    print(f"{name:36s} median {r['median'] * 1e3:7.2f} ms  "
          f"(mean {r['mean'] * 1e3:.2f} ± {r['stddev'] * 1e3:.2f} ms, {len(r['times'])} runs)")
print(f"median overhead: {(eb['median'] - py['median']) * 1e3:.2f} ms "
      f"(ratio {eb['median'] / py['median']:.2f}x)")
# The minimum is the least disturbed by other load on the machine.
print(f"min overhead:    {(eb['min'] - py['min']) * 1e3:.2f} ms "
      f"(python3 {py['min'] * 1e3:.2f} ms, execbox {eb['min'] * 1e3:.2f} ms)")
PY
