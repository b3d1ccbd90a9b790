#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the E2B SDK suite (sdk.mjs) after installing E2B's official JavaScript SDK, pinned by the
# committed lock file, with `npm ci` into $E2B_NODE_DIR, once per lock file version: concurrent
# runs wait on a lock, and npm's cache makes later installs work offline (--prefer-offline).
# Exit 77 (skip) only when node or npm is not installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${E2B_NODE_DIR:-${TMPDIR:-/tmp}/execbox-e2b-node}
# shellcheck source=../npm_ci.sh
. "$here/../npm_ci.sh"
npm_ci_once "$here" "$dest" "E2B's SDK"
export E2B_NODE_DIR="$dest"
exec node "$here/sdk.mjs" "$@"
