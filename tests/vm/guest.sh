#!/bin/bash
# SPDX-License-Identifier: MIT
# The VM lane's stage 2, inside the guest (the host's bash, from the run's share /vmlane): as
# pid 1 (plain layouts) it mounts what a booted system has, then it places the command's shell
# in the layout's cgroup, runs the command with run.sh's environment and working directory,
# its output into /vmlane/out and /vmlane/err, its exit code into /vmlane/rc, and powers off.
# Under systemd (layouts systemd-*) it is lane.service's ExecStart: systemd mounted all that.
set -u
L=/vmlane
# shellcheck source=/dev/null
. "$L/job" # LANE_LAYOUT, LANE_CWD, LANE_CMD (an array) and the exported environment
export LANE_LAYOUT # the checks expect the cgroup placement the layout calls for
say() { echo "lane: $*" >/dev/console 2>/dev/null || echo "lane: $*" >&2; }
poweroff_now() {
    sync
    # sysrq 'o' powers off at once (no init needed; writes to the 9p share are already on
    # the host: it is mounted without a cache).
    echo o >/proc/sysrq-trigger
    sleep 10
    /bin/busybox poweroff -f
}
finish() {
    echo "$1" >"$L/rc.tmp" && mv "$L/rc.tmp" "$L/rc"
    say "command exited $1"
    poweroff_now
}
cg=/sys/fs/cgroup
enable() { # the controllers in a cgroup's subtree_control, as systemd enables them
    local c
    for c in memory pids cpu; do
        grep -qw "$c" "$1/cgroup.controllers" && echo "+$c" >"$1/cgroup.subtree_control"
    done
}

if [[ $$ -eq 1 ]]; then
    # /proc and /sys come mounted from the initramfs.
    mountpoint -q /proc || mount -t proc proc /proc
    mountpoint -q /sys || mount -t sysfs sysfs /sys
    # Mounted as systemd mounts it on a pure v2 host.
    mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 $cg ||
        mount -t cgroup2 cgroup2 $cg
    mkdir -p /dev/pts /dev/shm
    mount -t devpts -o gid=5,mode=0620,ptmxmode=0666 devpts /dev/pts
    mount -t tmpfs -o mode=1777 tmpfs /dev/shm
    # /tmp: the init mounted the run's ext4 disk there.
    mount -t tmpfs -o mode=0755 tmpfs /run
    mkdir -p /run/lock
    ip link set lo up
    hostname execbox-vm
    trap '' PIPE
    say "stage 2 up ($(uname -r), layout $LANE_LAYOUT)"
fi

# The command in a subshell that first moves itself into the layout's cgroup.
run_in() { # cgroup dir (relative to $cg, "" = where we are), then the command's runner
    local dir=$1
    shift
    (
        if [[ -n "$dir" ]]; then echo "$BASHPID" >"$cg/$dir/cgroup.procs" || exit 125; fi
        cd "$LANE_CWD" || exit 125
        exec "$@"
    )
}
other() { # a process of the layout's that is not the command's: a sleep in that cgroup
    (
        echo "$BASHPID" >"$cg/$1/cgroup.procs" || exit 1
        exec sleep infinity
    ) </dev/null >/dev/null 2>&1 &
}

case "$LANE_LAYOUT" in
root)
    run_in "" "${LANE_CMD[@]}" >"$L/out" 2>"$L/err"
    rc=$?
    ;;
service)
    # A service with Delegate=yes: controllers enabled down to system.slice's subtree, and the
    # mark systemd (251+) puts on a delegated unit's cgroup. The lane's checks share the cgroup
    # with execbox, as a service's own helper processes would.
    mkdir -p $cg/system.slice/x.service
    enable $cg
    enable $cg/system.slice
    python3 -c 'import os, sys; os.setxattr(sys.argv[1], "trusted.delegate", b"1")' \
        $cg/system.slice/x.service || finish 125
    run_in system.slice/x.service "${LANE_CMD[@]}" >"$L/out" 2>"$L/err"
    rc=$?
    ;;
scope)
    # A login session: session-1.scope holds other processes too, its parents have the
    # controllers enabled, the scope's own subtree_control has none.
    s=user.slice/user-0.slice/session-1.scope
    mkdir -p $cg/$s
    enable $cg
    enable $cg/user.slice
    enable $cg/user.slice/user-0.slice
    other $s
    run_in $s "${LANE_CMD[@]}" >"$L/out" 2>"$L/err"
    rc=$?
    ;;
container)
    # A container: its own cgroup namespace rooted at /ctr (another process in it too) and,
    # in a mount namespace, a cgroup2 mount made there, which shows that root.
    mkdir -p $cg/ctr
    enable $cg
    other ctr
    # unshare -C -m: a new cgroup namespace (rooted at the cgroup we are in, /ctr) and a
    # new mount namespace (private) where the fresh cgroup2 mount replaces the host's view.
    run_in ctr unshare -C -m bash -c \
        'umount -l /sys/fs/cgroup && mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 /sys/fs/cgroup && exec "$@"' \
        lane "${LANE_CMD[@]}" >"$L/out" 2>"$L/err"
    rc=$?
    ;;
systemd-service | systemd-nodelegate)
    # lane.service's own cgroup (with or without Delegate=yes), as systemd made it.
    run_in "" "${LANE_CMD[@]}" >"$L/out" 2>"$L/err"
    rc=$?
    ;;
systemd-scope)
    # A session-like scope under user-0.slice made by systemd (over its bus), another
    # process in it beside the command.
    run_in "" systemd-run --quiet --scope --unit=session-1 --slice=user-0 -- \
        bash -c 'sleep infinity </dev/null >/dev/null 2>&1 & exec "$@"' lane "${LANE_CMD[@]}" \
        >"$L/out" 2>"$L/err"
    rc=$?
    ;;
*)
    echo "lane: unknown layout $LANE_LAYOUT" >"$L/err"
    rc=125
    ;;
esac
finish "$rc"
