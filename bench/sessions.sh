#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sessions: per-cell latency with pandas loaded, memory per idle session, how many fit in 4 GiB
# (bench/sessions.py, release build, root). CELLS and SESSIONS set the sizes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build-release}
[ "$(id -u)" = 0 ] || { echo "sessions bench: needs root (the jail's templates)"; exit 0; }
[ -x "$build/tests/session_driver" ] || { echo "sessions bench: $build/tests/session_driver not built"; exit 1; }
/usr/bin/python3 "$here/sessions.py" "$build/tests/session_driver" "${CELLS:-500}" "${SESSIONS:-40}"
