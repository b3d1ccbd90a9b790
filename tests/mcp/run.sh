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
# shellcheck source=../npm_ci.sh
. "$here/../npm_ci.sh"
npm_ci_once "$here" "$dest" "the MCP SDK clients"
export MCP_NODE_DIR="$dest"
exec node "$here/$script" "$@"
