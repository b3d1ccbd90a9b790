#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs one MCP conformance test (a node script in this directory) after installing the pinned
# official MCP SDK clients from the npm registry (`npm ci` with the committed lock file) into
# $MCP_NODE_DIR, once per lock file version: concurrent tests wait on a lock, and npm's cache
# makes later installs work offline (--prefer-offline). Exit 77 (skip) only when node or npm
# is not installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
script=${1:?usage: run.sh TEST.mjs}
shift
dest=${MCP_NODE_DIR:-${TMPDIR:-/tmp}/execbox-mcp-node}
for tool in node npm; do
    if ! command -v "$tool" >/dev/null; then
        echo "SKIP: '$tool' is not installed (scripts/deps/mcp.apt lists it)" >&2
        exit 77
    fi
done
mkdir -p "$dest"
(
    flock 9
    want=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
    have=$(cat "$dest/node_modules/.execbox-lock-sha256" 2>/dev/null || true)
    if [[ "$want" != "$have" ]]; then
        cp "$here/package.json" "$here/package-lock.json" "$dest/"
        echo "installing the MCP SDK clients with npm ci into $dest" >&2
        npm ci --prefix "$dest" --prefer-offline --no-audit --no-fund --loglevel=error >&2
        echo "$want" >"$dest/node_modules/.execbox-lock-sha256"
    fi
) 9>"$dest/.lock"
export MCP_NODE_DIR="$dest"
exec node "$here/$script" "$@"
