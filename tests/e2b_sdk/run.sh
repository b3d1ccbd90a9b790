#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the E2B SDK suite (sdk.mjs) after installing E2B's official JavaScript SDK, pinned by the
# committed lock file, with `npm ci` into $E2B_NODE_DIR, once per lock file version: concurrent
# runs wait on a lock, and npm's cache makes later installs work offline (--prefer-offline).
# Exit 77 (skip) only when node or npm is not installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${E2B_NODE_DIR:-${TMPDIR:-/tmp}/execbox-e2b-node}
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
        echo "installing E2B's SDK with npm ci into $dest" >&2
        npm ci --prefix "$dest" --prefer-offline --no-audit --no-fund --loglevel=error >&2
        echo "$want" >"$dest/node_modules/.execbox-lock-sha256"
    fi
) 9>"$dest/.lock"
export E2B_NODE_DIR="$dest"
exec node "$here/sdk.mjs" "$@"
