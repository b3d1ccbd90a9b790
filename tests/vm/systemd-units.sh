#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Writes the units a systemd-* layout boots with into DIR (the VM's init copies DIR into the
# overlay's /etc/systemd/system; the host's own units are never touched): lane.target (what the
# VM boots instead of default.target: basic.target, D-Bus, lane.service), lane.service (runs
# /vmlane/guest.sh; Delegate=yes for systemd-service), and masks for what is slow or irrelevant
# under TCG on a 9p root.
#   systemd-units.sh LAYOUT DIR
set -euo pipefail
layout=$1 dir=$2
mkdir -p "$dir"
delegate=
[[ $layout == systemd-service ]] && delegate=Delegate=yes
cat >"$dir/lane.target" <<UNIT
[Unit]
Description=execbox VM lane
Requires=basic.target lane.service
Wants=dbus.socket dbus.service
After=basic.target
AllowIsolate=yes
UNIT
cat >"$dir/lane.service" <<UNIT
[Unit]
Description=execbox VM lane command ($layout)
After=basic.target dbus.socket dbus.service
[Service]
Type=exec
ExecStart=/bin/bash /vmlane/guest.sh
StandardInput=null
StandardOutput=journal+console
StandardError=journal+console
$delegate
UNIT
# Masked: devices (udev: there are none to manage), the host's fstab and disks, tmpfiles
# (walks the host's dirs over 9p), journal flushing to the host's /var, clocks, networking,
# gettys, timers, the host's own daemons.
masks=(
    systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket
    systemd-udev-trigger.service systemd-udev-settle.service systemd-hwdb-update.service
    systemd-tmpfiles-setup.service systemd-tmpfiles-setup-dev.service
    systemd-tmpfiles-clean.timer systemd-tmpfiles-clean.service
    systemd-journal-flush.service systemd-journal-catalog-update.service
    systemd-random-seed.service systemd-timesyncd.service systemd-pstore.service
    systemd-networkd.service systemd-networkd.socket systemd-networkd-wait-online.service
    systemd-resolved.service networking.service ifupdown-pre.service
    systemd-remount-fs.service systemd-fsck-root.service systemd-binfmt.service
    proc-sys-fs-binfmt_misc.automount proc-sys-fs-binfmt_misc.mount
    systemd-modules-load.service kmod-static-nodes.service
    systemd-update-utmp.service systemd-update-utmp-runlevel.service
    systemd-machine-id-commit.service systemd-firstboot.service systemd-sysusers.service
    systemd-update-done.service ldconfig.service systemd-boot-system-token.service
    systemd-ask-password-console.path systemd-ask-password-wall.path
    keyboard-setup.service console-setup.service systemd-vconsole-setup.service
    apparmor.service e2scrub_reap.service e2scrub_all.timer
    timers.target getty.target serial-getty@ttyS0.service getty@tty1.service
    apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer man-db.timer fstrim.timer
    remote-fs.target swap.target cryptsetup.target podman.socket podman.service
    podman-restart.service podman-auto-update.service haproxy.service postgresql.service
    dev-hugepages.mount dev-mqueue.mount sys-kernel-debug.mount sys-kernel-tracing.mount
    sys-fs-fuse-connections.mount sys-kernel-config.mount
)
for u in "${masks[@]}"; do ln -sf /dev/null "$dir/$u"; done
# What the VM boots: lane.target as the default (the overlay's /etc/systemd/system wins over
# /lib's default.target); systemd.unit= on the command line is also given.
ln -sf lane.target "$dir/default.target"
