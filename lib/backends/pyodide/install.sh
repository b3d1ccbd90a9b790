#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the pyodide backend's files into DEST: runner.mjs and main.py from this directory,
# and the pinned Pyodide from the npm registry (`npm ci` with the committed lock file). Once per
# lock file version: concurrent callers wait on a lock, and npm's cache makes later installs
# work offline (--prefer-offline). Exit 77 when node or npm is missing (tests read it as a skip).
# Usage: install.sh DEST
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:?usage: install.sh DEST}
for tool in node npm; do
    if ! command -v "$tool" >/dev/null; then
        echo "pyodide: '$tool' is not installed (scripts/deps/pyodide.apt lists it)" >&2
        exit 77
    fi
done
mkdir -p "$dest"
(
    flock 9
    want=$(cat "$here/package-lock.json" "$here/runner.mjs" "$here/main.py" | sha256sum | cut -d' ' -f1)
    have=$(cat "$dest/.execbox-sha256" 2>/dev/null || true)
    if [[ "$want" != "$have" ]]; then
        # Run as installed (on its own directory), the files are in place already.
        if [[ ! "$here" -ef "$dest" ]]; then
            cp "$here/package.json" "$here/package-lock.json" "$here/runner.mjs" "$here/main.py" "$dest/"
        fi
        echo "pyodide: installing the pinned Pyodide with npm ci into $dest" >&2
        npm ci --prefix "$dest" --prefer-offline --no-audit --no-fund --loglevel=error >&2
        echo "$want" >"$dest/.execbox-sha256"
    fi
) 9>"$dest/.lock"
