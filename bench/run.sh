#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every benchmark in bench/ (each bench/*.sh but this one) against the release build.
# `make bench` builds build-release first. Results (hyperfine JSON) go to bench/results/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
status=0
for b in "$here"/*.sh; do
    [ "$(basename "$b")" = run.sh ] && continue
    echo "== $(basename "$b" .sh)"
    bash "$b" || { echo "bench $(basename "$b"): failed" >&2; status=1; }
done
exit $status
