#!/bin/bash
# SPDX-License-Identifier: MIT
# The VM lane's systemd layouts: before the host's own systemd 252 takes over as pid 1, the
# overlay's /etc gets a target that starts D-Bus and the lane's command, and the units that
# only slow a TCG boot (or would touch the host's disks and /tmp) are masked. Layouts:
#   systemd-service     the command in a service with Delegate=yes (as deploy/systemd ships)
#   systemd-nodelegate  the command in a service without Delegate=
#   systemd-scope       the command in a scope with its shell, as a login session has it
set -eu
layout=$1
etc=/etc/systemd/system
: >/etc/fstab # the host's fstab is not the VM's
for u in timers.target paths.target systemd-udevd.service systemd-udev-trigger.service \
    systemd-udev-settle.service systemd-tmpfiles-setup.service systemd-tmpfiles-setup-dev.service \
    systemd-tmpfiles-clean.timer systemd-journal-flush.service systemd-random-seed.service \
    systemd-update-utmp.service systemd-timesyncd.service apparmor.service systemd-binfmt.service \
    keyboard-setup.service console-setup.service systemd-modules-load.service \
    kmod-static-nodes.service systemd-remount-fs.service systemd-fsck-root.service swap.target \
    cryptsetup.target systemd-logind.service getty.target serial-getty@ttyS0.service \
    systemd-hwdb-update.service systemd-journal-catalog-update.service ldconfig.service \
    systemd-sysusers.service systemd-firstboot.service systemd-pstore.service \
    systemd-boot-system-token.service proc-sys-fs-binfmt_misc.automount \
    sys-kernel-debug.mount sys-kernel-tracing.mount dev-hugepages.mount dev-mqueue.mount \
    sys-fs-fuse-connections.mount sys-kernel-config.mount tmp.mount; do
    ln -sf /dev/null "$etc/$u"
done
cat >/out/wrap.sh <<'W'
#!/bin/bash
# The command as stage2 runs it: the host's cwd and environment, output and status to /out.
set -a; . /out/env; set +a
cd "$(cat /out/cwd)" && bash /out/cmd >/out/stdout 2>/out/stderr
echo $? >/out/rc
sync
W
case "$layout" in
systemd-service) exec_start="/bin/bash /out/wrap.sh"; delegate="Delegate=yes" ;;
systemd-nodelegate) exec_start="/bin/bash /out/wrap.sh"; delegate="" ;;
systemd-scope) exec_start="/usr/bin/systemd-run --scope --unit=session-lane --quiet /bin/bash /out/wrap.sh"; delegate="" ;;
*) echo "systemd.sh: unknown layout $layout" >&2; exit 2 ;;
esac
cat >"$etc/execbox-lane.service" <<U
[Unit]
Description=the VM lane's command
Requires=dbus.service
After=dbus.service
[Service]
Type=oneshot
ExecStart=$exec_start
ExecStopPost=/bin/sh -c 'sync; echo o >/proc/sysrq-trigger'
$delegate
TimeoutStartSec=infinity
StandardOutput=journal+console
StandardError=journal+console
U
cat >"$etc/execbox-lane.target" <<U
[Unit]
Description=the VM lane
Requires=execbox-lane.service
After=execbox-lane.service
AllowIsolate=yes
U
