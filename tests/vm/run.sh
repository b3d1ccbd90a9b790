#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs a command in a qemu VM (TCG: no KVM here) booting Debian's own kernel with this host's
# root file system (9p, read-only, under a tmpfs overlay) on pure cgroup v2, in one of the cgroup
# layouts users have (stage2.sh, systemd.sh). The command runs as root with this cwd and the
# EXECBOX* variables and PATH; its stdout and stderr come back here and its status is ours.
#   tests/vm/run.sh --kernel 6.1|6.12 --layout L [--timeout S] -- CMD...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kernel=6.12 layout=root timeout=900
while [[ $# -gt 0 ]]; do
    case "$1" in
    --kernel) kernel=$2; shift 2 ;;
    --layout) layout=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[[ $# -gt 0 ]] || { echo "run.sh: no command" >&2; exit 2; }
cache=$("$here/setup.sh")
kdir="$cache/$kernel"
[[ -f "$kdir/ok" ]] || { echo "run.sh: kernel $kernel not set up" >&2; exit 2; }
work=$(mktemp -d /tmp/execbox-vm.XXXXXX)
qpid=
cleanup() { [[ -n "$qpid" ]] && kill -9 "$qpid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
out="$work/out" && mkdir -p "$out"
printf '%s\n' "$layout" >"$out/layout"
printf '%s\n' "$PWD" >"$out/cwd"
printf '%q ' "$@" >"$out/cmd"
echo >>"$out/cmd"
env | grep -E '^(EXECBOX[A-Z_]*|PATH|PYTHONPATH|EB_[A-Z_]*)=' | sed 's/=\(.*\)/=\x27\1\x27/' >"$out/env" || true
echo "/out/stage2.sh" >"$out/stage2"
cp "$here/stage2.sh" "$here/systemd.sh" "$out/"
# The initramfs: the cached busybox and modules, and our init.
ird="$work/initrd" && cp -a "$kdir/initrd" "$ird" && cp "$here/init" "$ird/init" && chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"
append="console=ttyS0 panic=-1 quiet loglevel=3 systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all"
[[ "$layout" == systemd-* ]] && append+=" systemd.unit=execbox-lane.target systemd.show_status=0"
log="${EXECBOX_VM_LOG:-$work/console.log}"
start=$(date +%s.%N)
qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 4G -nographic -no-reboot \
    -nic none -kernel "$kdir/vmlinuz" -initrd "$work/initrd.gz" -append "$append" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=passthrough,readonly=on,multidevs=remap \
    -virtfs local,path="$out",mount_tag=out,security_model=passthrough,multidevs=remap \
    </dev/null >"$log" 2>&1 &
qpid=$!
deadline=$(($(date +%s) + timeout))
while kill -0 "$qpid" 2>/dev/null; do
    if (($(date +%s) >= deadline)); then
        echo "run.sh: the VM ran past ${timeout}s; killed (console: last lines below)" >&2
        tail -20 "$log" >&2
        exit 124
    fi
    sleep 0.5
done
wait "$qpid" || true
qpid=
secs=$(echo "$(date +%s.%N) - $start" | bc)
cat "$out/stdout" 2>/dev/null || true
cat "$out/stderr" >&2 2>/dev/null || true
if [[ ! -s "$out/rc" ]]; then
    echo "run.sh: the VM ended without the command's status (console: last lines below)" >&2
    tail -30 "$log" >&2
    exit 125
fi
echo "run.sh: kernel $kernel ($(cat "$kdir/version")), layout $layout: ${secs}s" >&2
exit "$(cat "$out/rc")"
