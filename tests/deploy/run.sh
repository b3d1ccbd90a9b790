#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs validate.mjs after installing its pinned packages from the npm registry (`npm ci` with
# the committed lock file) into $DEPLOY_NODE_DIR, once per lock file version (later installs
# work from npm's cache). Exit 77 (skip) only when node or npm is not installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${1:?usage: run.sh SOURCE_DIR}
dest=${DEPLOY_NODE_DIR:-${TMPDIR:-/tmp}/execbox-deploy-node}
for tool in node npm; do
    command -v "$tool" >/dev/null || { echo "SKIP: '$tool' is not installed (scripts/deps/mcp.apt)" >&2; exit 77; }
done
mkdir -p "$dest"
(
    flock 9
    want=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
    if [[ "$want" != "$(cat "$dest/node_modules/.execbox-lock-sha256" 2>/dev/null || true)" ]]; then
        cp "$here/package.json" "$here/package-lock.json" "$dest/"
        npm ci --prefix "$dest" --prefer-offline --no-audit --no-fund --loglevel=error >&2
        echo "$want" >"$dest/node_modules/.execbox-lock-sha256"
    fi
) 9>"$dest/.lock"
cp "$here/validate.mjs" "$dest/validate.mjs" # resolves its packages from $dest/node_modules
exec node "$dest/validate.mjs" "$src"
