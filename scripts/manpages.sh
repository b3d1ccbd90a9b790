#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# manpages.sh EXECBOX OUTDIR: writes execbox(1) and one page per command (execbox-run(1), ...)
# into OUTDIR with help2man, from the program's own --help texts, so that the pages say what
# the built program does. Run at build time (src/CMakeLists.txt, target `man`).
set -euo pipefail
exe=$(realpath "$1")
out=$2
mkdir -p "$out"
ver=$("$exe" --version | awk '{print $2}')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The commands and their one-line summaries, as `execbox --help` lists them.
mapfile -t cmds < <("$exe" --help | awk '/^Commands:/{on=1; next} on && /^  [a-z]/{print} on && /^$/{on=0}')
[ "${#cmds[@]}" -gt 0 ] || { echo "manpages: no commands in '$exe --help'" >&2; exit 1; }

see="execbox(1)"
for line in "${cmds[@]}"; do
    see+=", execbox-$(awk '{print $1}' <<<"$line")(1)"
done
cat >"$tmp/common.h2m" <<EOT
[SEE ALSO]
$see

The documentation in the source tree's docs/ directory: the result record (result.md), the
security policy (policy.md), the jail (jail.md), backends (backends.md), sessions
(sessions.md), MCP (mcp.md), the HTTP API (api.md, openapi.yaml) and the threat model
(threat-model.md).
EOT

# execbox(1): the command list.
help2man --no-info --no-discard-stderr --version-string="$ver" --section=1 \
    --name="run untrusted code for LLM agents in fresh, disposable sandboxes" \
    --include="$tmp/common.h2m" --output="$out/execbox.1" "$exe"

# execbox-CMD(1): a wrapper named after the page runs `execbox CMD`.
for line in "${cmds[@]}"; do
    cmd=$(awk '{print $1}' <<<"$line")
    summary=$(sed -E 's/^ +[a-z]+ +//' <<<"$line")
    w="$tmp/execbox-$cmd"
    printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$exe" "$cmd" >"$w"
    chmod +x "$w"
    "$w" --help >/dev/null 2>&1 || { echo "manpages: 'execbox $cmd --help' failed" >&2; exit 1; }
    help2man --no-info --no-discard-stderr --version-string="$ver" --section=1 \
        --name="$summary" --include="$tmp/common.h2m" --output="$out/execbox-$cmd.1" "$w"
done
