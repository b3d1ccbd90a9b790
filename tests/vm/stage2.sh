#!/bin/bash
# SPDX-License-Identifier: MIT
# The VM lane's pid 1 in the host's root (overlay): the system mounts a host has, cgroup v2,
# loopback, then the lane's command in the cgroup layout asked for (/out/layout), its output
# and exit status into /out, and power off. With layout systemd-*, real systemd takes over as
# pid 1 instead and runs the command from a unit (tests/vm/systemd.sh writes the units).
set -u
out=/out
layout=$(cat $out/layout)
mount -t tmpfs -o mode=1777,size=2G tmpfs /tmp
mount -t tmpfs -o mode=0755,size=256M tmpfs /run
mkdir -p /dev/pts /dev/shm /run/lock
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
ip link set lo up 2>/dev/null || busybox ip link set lo up
hostname execbox-vm
off() { sync; echo o >/proc/sysrq-trigger; sleep 30; }
case "$layout" in
systemd-*)
    bash /out/systemd.sh "$layout" || { echo "stage2: systemd set-up failed" >$out/stderr; echo 125 >$out/rc; off; }
    umount /tmp /run /dev/shm /dev/pts /sys/fs/cgroup 2>/dev/null
    exec /lib/systemd/systemd --log-level=warning --log-target=console
    ;;
esac
cg=/sys/fs/cgroup
enable() { echo "+memory +pids +cpu" >"$1/cgroup.subtree_control"; }
run_cmd() { # in the cwd and environment the host gave
    set -a; . $out/env; set +a
    cd "$(cat $out/cwd)" && bash $out/cmd >$out/stdout 2>$out/stderr
    echo $? >$out/rc
}
case "$layout" in
root) run_cmd ;;
service) # a systemd service with Delegate=yes, as systemd lays it out
    enable $cg; mkdir $cg/system.slice; enable $cg/system.slice
    mkdir $cg/system.slice/x.service
    # systemd (v251+) marks the cgroups it delegates; the shells that run the command stand
    # for the unit's other processes (an ExecStart wrapper).
    python3 -c 'import os, sys; os.setxattr(sys.argv[1], "trusted.delegate", b"1")' \
        $cg/system.slice/x.service
    echo $$ >$cg/system.slice/x.service/cgroup.procs
    run_cmd ;;
scope) # a login session: controllers down to the user's slice, the scope holds a shell too
    enable $cg; mkdir -p $cg/user.slice/user-0.slice/session-1.scope
    enable $cg/user.slice; enable $cg/user.slice/user-0.slice
    sleep 1000000 & echo $! >$cg/user.slice/user-0.slice/session-1.scope/cgroup.procs
    echo $$ >$cg/user.slice/user-0.slice/session-1.scope/cgroup.procs
    run_cmd ;;
container) # a container: its own cgroup namespace rooted at its cgroup, an init beside us
    enable $cg; mkdir $cg/ctr
    sleep 1000000 & echo $! >$cg/ctr/cgroup.procs
    echo $$ >$cg/ctr/cgroup.procs
    # unshare -C roots the namespace at /ctr; a fresh cgroup2 mount in a new mount namespace
    # shows just that subtree, as a container's runtime mounts it.
    unshare -C -m --propagation private bash -c \
        'umount /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup && exec "$@"' _ \
        bash -c "$(declare -f run_cmd); out=$out; run_cmd" ;;
*) echo "stage2: unknown layout $layout" >$out/stderr; echo 125 >$out/rc ;;
esac
off
