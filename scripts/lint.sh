#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Banned-call check (as curl does) and clang-format check over the tracked C sources.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.c' '*.h' 2>/dev/null || find lib src include tests -name '*.[ch]')
status=0
# strcpy, sprintf, atoi and strtok (not strtok_r) are banned: unbounded or error-blind.
if grep -nE '\b(strcpy|sprintf|vsprintf|atoi|atol|gets|strtok)\s*\(' $files | grep -v '^\s*//' ; then
    echo "lint: banned function used (see docs/STYLE: use snprintf, strtol, strtok_r, memcpy)" >&2
    status=1
fi
# Dependencies run CLI -> surface -> common: only src/cli/ may include the CLI's private headers.
if git ls-files 'src/*.c' 'src/*.h' | grep -v '^src/cli/' | xargs grep -nE '#include "(cli/|\.\./cli/)' ; then
    echo "lint: a surface includes a private header of src/cli/ (share it from src/common/)" >&2
    status=1
fi
# The library's layers (docs/architecture.md): a file in lib/L/ includes the library's headers
# only from its own folder and from the layers below L, always by their lib-rooted path.
if ! python3 - $(git ls-files 'lib/*.c' 'lib/*.h') <<'PY'
import re, sys
rank = {'base': 0, 'model': 1, 'proc': 2, 'ws': 2, 'jail': 3, 'backends': 4, 'core': 5}
bad = 0
for f in sys.argv[1:]:
    parts = f.split('/')
    me = parts[1] if len(parts) > 2 else None
    if me not in rank:
        print(f'{f}: a C file outside the layer folders {sorted(rank)}')
        bad = 1
        continue
    for n, line in enumerate(open(f, encoding='utf-8'), 1):
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if not m or m.group(1) in ('execbox/execbox.h', 'seccomp_bpf.h'):
            continue
        top = m.group(1).split('/')[0]
        if top not in rank:
            print(f'{f}:{n}: #include "{m.group(1)}" is not by a lib-rooted path (base/..., jail/...)')
            bad = 1
        elif top != me and rank[top] >= rank[me]:
            print(f'{f}:{n}: {me}/ includes {m.group(1)}: a layer includes only the layers below it')
            bad = 1
sys.exit(bad)
PY
then
    echo "lint: the library's layering is broken (docs/architecture.md)" >&2
    status=1
fi
# Sizes: no file of lib/ or src/ over 1,000 lines, no function over 150 (scripts/sizes.py).
if ! scripts/sizes.py --check; then
    echo "lint: a file or function is too long to read whole: split it by concern" >&2
    status=1
fi
# The project's own docs stand alone: nothing sends a reader to the design notes outside it.
if git ls-files | grep -vE '^(scripts/lint.sh)$' | xargs grep -nI 'DESIGN\.md' ; then
    echo "lint: a file refers to DESIGN.md, which users do not have (point to docs/ instead)" >&2
    status=1
fi
if command -v clang-format >/dev/null; then
    bad=$(for f in $files; do clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"; done)
    if [[ -n "$bad" ]]; then
        echo "lint: not clang-formatted (run 'make format'):" $bad >&2
        status=1
    fi
fi
[[ $status -eq 0 ]] && echo "lint: ok"
exit $status
