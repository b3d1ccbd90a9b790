#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs one command as root in a qemu VM (TCG) booted on one of Debian's kernels, on the host's
# own root (9p, read-only, under a tmpfs overlay) with pure cgroup v2, the command's shell
# placed as the layout says; prints its stdout and stderr here and exits with its exit code.
#   run.sh --kernel 6.1|6.12 --layout LAYOUT [--timeout S] [--console FILE] [--env NAME[=V]]...
#          [--mem MiB] -- CMD...
# Layouts: root, service, scope, container (a busybox init, then the host's bash as pid 1) and
# systemd-service, systemd-nodelegate, systemd-scope (the host's systemd as pid 1). The working
# directory and the environment (PATH, HOME, LANG, EXECBOX*, PYTHON*, *SAN_OPTIONS and each
# --env) pass through. Exit 77: qemu or the kernels are missing (run tests/vm/setup.sh);
# 124: the deadline passed (qemu is killed); 125: the VM ended without the command's exit code.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CACHE=${EXECBOX_VM_CACHE:-/var/cache/execbox-vm}
kernel= layout=root timeout=600 console= mem=2048
extra_env=()
while [[ $# -gt 0 ]]; do
    case "$1" in
    --kernel) kernel=$2; shift 2 ;;
    --layout) layout=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --console) console=$2; shift 2 ;;
    --env) extra_env+=("$2"); shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[[ $# -gt 0 ]] || { echo "run.sh: no command (after --)" >&2; exit 2; }
case "$layout" in
root | service | scope | container) mode=plain ;;
systemd-service | systemd-nodelegate | systemd-scope) mode=systemd ;;
*) echo "run.sh: unknown layout $layout" >&2; exit 2 ;;
esac
kdir="$CACHE/$(cat "$CACHE/lane-$kernel" 2>/dev/null)"
skip() { echo "run.sh: skipped: $*" >&2; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "needs root (the 9p share of / passes the guest's root through)"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 missing (tests/vm/setup.sh)"
[[ -n "$kernel" && -f "$kdir/ok" && -f "$kdir/initrd.cpio.gz" ]] ||
    skip "kernel '$kernel' is not in $CACHE (tests/vm/setup.sh)"
cmp -s "$here/init" "$kdir/init.used" || skip "$kdir's initramfs is older than tests/vm/init (tests/vm/setup.sh)"

W=$(mktemp -d /tmp/execbox-vm.XXXXXX)
qpid=
cleanup() {
    if [[ -n "$qpid" ]]; then kill -KILL "$qpid" 2>/dev/null || true; wait "$qpid" 2>/dev/null || true; fi
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
[[ -n "$console" ]] || console="/tmp/execbox-vm.$kernel.$layout.console.log"

# The job: the layout, the working directory, the command and the environment, as bash reads
# them back (printf %q).
{
    printf 'LANE_LAYOUT=%q\nLANE_CWD=%q\nLANE_CMD=(' "$layout" "$PWD"
    printf ' %q' "$@"
    printf ' )\n'
    while IFS= read -r name; do
        case "$name" in
        PATH | HOME | LANG | LC_* | TZ | EXECBOX* | PYTHON* | PYENV* | ASAN_OPTIONS | UBSAN_OPTIONS | LSAN_OPTIONS)
            printf 'export %s=%q\n' "$name" "${!name}" ;;
        esac
    done < <(compgen -e)
    for e in "${extra_env[@]}"; do
        if [[ "$e" == *=* ]]; then printf 'export %s=%q\n' "${e%%=*}" "${e#*=}"; else printf 'export %s=%q\n' "$e" "${!e-}"; fi
    done
} >"$W/job"
cp "$here/guest.sh" "$W/guest.sh"
# The guest's /tmp: a sparse ext4 disk of its own (as a Debian 12 host's /tmp is on ext4).
truncate -s 8G "$W/tmp.img"
mkfs.ext4 -q -F -m 0 -E lazy_itable_init=1,lazy_journal_init=1,root_owner=0:0 "$W/tmp.img"

cmdline="console=ttyS0 panic=-1 ${EXECBOX_VM_CMDLINE:-quiet loglevel=4} systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all lane.mode=$mode"
# A working directory under /tmp (a checkout cloned there) would be hidden by the guest's own
# /tmp disk: the init shows the host's top directory of it there again (lane.show).
if [[ $PWD == /tmp/?* ]]; then
    rest=${PWD#/tmp/}
    show=/tmp/${rest%%/*}
    [[ $show != *[[:space:]]* ]] || { echo "run.sh: $show: a path with blanks cannot be shown to the guest" >&2; exit 2; }
    cmdline+=" lane.show=$show"
fi
if [[ $mode == systemd ]]; then
    "$here/systemd-units.sh" "$layout" "$W/systemd"
    # fstab=no: the host's fstab is not this VM's; the lane's own target instead of default.
    cmdline+=" systemd.unit=lane.target fstab=no systemd.gpt_auto=0 systemd.firstboot=0 systemd.journald.forward_to_console=0 systemd.show_status=1"
fi

# TCG (no usable KVM here), both cores by MTTCG. The host's root is shared read-only; only
# the run's own dir is writable. No network device: the guest has loopback only.
t0=$EPOCHREALTIME
setpriv --pdeathsig KILL -- qemu-system-x86_64 \
    -accel tcg,thread=multi -smp 2 -cpu max -m "$mem" -M pc \
    -nodefaults -no-user-config -display none -no-reboot \
    -kernel "$kdir/vmlinuz" -initrd "$kdir/initrd.cpio.gz" -append "$cmdline" \
    -serial "file:$console" \
    -virtfs local,path=/,mount_tag=root,security_model=passthrough,readonly=on,multidevs=remap \
    -virtfs "local,path=$W,mount_tag=lane,security_model=passthrough,multidevs=remap" \
    -drive "file=$W/tmp.img,if=virtio,format=raw,cache=unsafe,discard=unmap" \
    ${EXECBOX_VM_QEMU_ARGS:-} </dev/null >"$W/qemu.log" 2>&1 &
qpid=$!
# The command's stdout as it comes (the share's file is the host's own); stderr at the end.
: >"$W/out"
tail -n +1 -s 0.5 -f --pid="$qpid" "$W/out" &
tpid=$!
deadline=$(($(date +%s) + timeout))
timed_out=0
while kill -0 "$qpid" 2>/dev/null; do
    if [[ $(date +%s) -ge $deadline ]]; then timed_out=1; kill -KILL "$qpid" 2>/dev/null || true; break; fi
    sleep 0.5
done
wait "$qpid" 2>/dev/null || true
qpid=
wait "$tpid" 2>/dev/null || true
secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
[[ -f "$W/err" ]] && cat "$W/err" >&2
[[ -s "$W/qemu.log" ]] && sed 's/^/run.sh: qemu: /' "$W/qemu.log" >&2
if [[ $timed_out -eq 1 ]]; then
    echo "run.sh: $kernel/$layout: deadline of ${timeout}s passed: qemu killed (console: $console)" >&2
    exit 124
fi
[[ -f "$W/init-failed" ]] && echo "run.sh: $(cat "$W/init-failed")" >&2
if [[ ! -f "$W/rc" ]]; then
    echo "run.sh: $kernel/$layout: the VM ended without the command's exit code after ${secs}s (console: $console)" >&2
    exit 125
fi
echo "run.sh: $kernel/$layout: VM ran ${secs}s, command exited $(cat "$W/rc")" >&2
exit "$(cat "$W/rc")"
