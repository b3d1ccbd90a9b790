#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sourced by the node test runners (tests/mcp/run.sh, tests/e2b_sdk/run.sh):
#   npm_ci_once SRC DEST WHAT
# installs the packages pinned by SRC/package-lock.json (`npm ci`) into DEST, once per lock file
# version: concurrent tests wait on a lock, and npm's cache makes later installs work offline
# (--prefer-offline). Exits 77 (skip) only when node or npm is not installed.
npm_ci_once() {
    local src=$1 dest=$2 what=$3 tool want have
    for tool in node npm; do
        if ! command -v "$tool" >/dev/null; then
            echo "SKIP: '$tool' is not installed (scripts/deps/mcp.apt lists it)" >&2
            exit 77
        fi
    done
    mkdir -p "$dest"
    (
        flock 9
        want=$(sha256sum "$src/package-lock.json" | cut -d' ' -f1)
        have=$(cat "$dest/node_modules/.execbox-lock-sha256" 2>/dev/null || true)
        if [[ "$want" != "$have" ]]; then
            cp "$src/package.json" "$src/package-lock.json" "$dest/"
            echo "installing $what with npm ci into $dest" >&2
            npm ci --prefix "$dest" --prefer-offline --no-audit --no-fund --loglevel=error >&2
            echo "$want" >"$dest/node_modules/.execbox-lock-sha256"
        fi
    ) 9>"$dest/.lock"
}
