#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs tests/integration/pyodide.py after installing the pinned Pyodide (npm ci with the
# committed lock file, lib/backends/pyodide/install.sh) into $PYODIDE_TEST_DIR once per lock
# file version. Exit 77 (skip) when node or npm is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${PYODIDE_TEST_DIR:-${TMPDIR:-/tmp}/execbox-pyodide}
"$here/../../lib/backends/pyodide/install.sh" "$dest" || exit $?
export EXECBOX_PYODIDE_DIR="$dest"
exec python3 "$here/../integration/pyodide.py" "$@"
