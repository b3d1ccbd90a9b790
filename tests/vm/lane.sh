#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The VM lane: for each kernel x layout, one VM boot (tests/vm/run.sh) that runs every check of
# tests/vm/checks.py against the built execbox; prints each boot's `ok`/`FAIL` lines, its time,
# and a closing `N passed, N failed` over all boots. Exit 0 when every check passed, 77 when the
# VM cannot run here (run.sh's reason), 1 otherwise.
#   lane.sh [--kernel K]... [--layout L]... [--walls] [--timeout S] [--console-dir DIR]
# Defaults: kernels 6.1 6.12; layouts root service scope container systemd-service
# systemd-nodelegate systemd-scope; --walls adds tests/integration/jail_walls.py to each boot.
# EXECBOX (default build/execbox), EXECBOX_SOURCE and EXECBOX_BUILD pass through to the VM.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
kernels=() layouts=() walls= timeout=900 condir=${TMPDIR:-/tmp}
while [[ $# -gt 0 ]]; do
    case "$1" in
    --kernel) kernels+=("$2"); shift 2 ;;
    --layout) layouts+=("$2"); shift 2 ;;
    --walls) walls=--walls; shift ;;
    --timeout) timeout=$2; shift 2 ;;
    --console-dir) condir=$2; shift 2 ;;
    *) echo "lane.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[[ ${#kernels[@]} -gt 0 ]] || kernels=(6.1 6.12)
[[ ${#layouts[@]} -gt 0 ]] || layouts=(root service scope container systemd-service systemd-nodelegate systemd-scope)
export EXECBOX=${EXECBOX:-$src/build/execbox}
export EXECBOX_SOURCE=${EXECBOX_SOURCE:-$src}
export EXECBOX_BUILD=${EXECBOX_BUILD:-$(dirname "$EXECBOX")}
[[ -x "$EXECBOX" ]] || { echo "lane.sh: no execbox at $EXECBOX (build it first)" >&2; exit 1; }
cd "$src" || exit 1
total_pass=0 total_fail=0 skipped=0 summary=()
for k in "${kernels[@]}"; do
    for l in "${layouts[@]}"; do
        extra=()
        [[ $l == systemd-* ]] && extra+=(--busctl)
        t0=$EPOCHREALTIME
        log=$(mktemp)
        con="$condir/execbox-vm.$k.$l.console.log"
        again=
        # A guest kernel that oopses before the checks end gets one more boot: MTTCG (two
        # emulated CPUs on two host threads) now and then breaks the kernel's cross-CPU code
        # patching (an "Oops: int3" in a function being patched, seen once in 19 boots on a
        # busy host). A crash that execbox causes repeats on the second boot and fails it; the
        # first boot's console is kept beside the log, and the summary says it was booted twice.
        for attempt in 1 2; do
            "$here/run.sh" --kernel "$k" --layout "$l" --timeout "$timeout" --console "$con" -- \
                python3 "$here/checks.py" $walls "${extra[@]}" 2>&1 | tee "$log" | sed "s/^/[$k $l] /"
            rc=${PIPESTATUS[0]}
            oops=$(grep -m1 -E 'Oops:|Kernel panic|BUG:' "$con" 2>/dev/null | sed 's/^\[[ 0-9.]*\] //')
            if [[ $attempt -eq 1 && $rc -eq 125 && -n "$oops" ]]; then
                mv "$con" "$con.oops"
                again=" (booted twice: the first boot's kernel crashed: $oops; console $con.oops)"
                echo "[$k $l] the guest kernel crashed ($oops): booting again once"
                continue
            fi
            break
        done
        secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
        if [[ $rc -eq 77 ]]; then
            skipped=$((skipped + 1)); summary+=("$k $l: skipped (${secs}s)")
            rm -f "$log"; continue
        fi
        p=$(grep -c '^ok ' "$log") f=$(grep -c '^FAIL ' "$log")
        if ! grep -qE '^[0-9]+ passed, [0-9]+ failed$' "$log"; then
            f=$((f + 1)); summary+=("$k $l: the checks did not finish (run.sh exit $rc) after ${secs}s$again")
        else
            summary+=("$k $l: $p passed, $f failed in ${secs}s$again")
        fi
        total_pass=$((total_pass + p)) total_fail=$((total_fail + f))
        rm -f "$log"
    done
done
printf '%s\n' "${summary[@]}"
if [[ $total_pass -eq 0 && $total_fail -eq 0 && $skipped -gt 0 ]]; then
    echo "lane.sh: skipped: the VM cannot run here (see run.sh's reason above)"
    exit 77
fi
echo "vm: $total_pass passed, $total_fail failed"
[[ $total_fail -eq 0 ]]
