#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The VM lane's parts, made once and reused (idempotent): qemu, busybox and kmod (Debian's
# packages, scripts/deps/vm.apt), Debian's own 6.1 (bookworm) and 6.12 (bookworm-backports)
# kernels fetched with `apt-get download` and unpacked into a cache (never installed on this
# host), and one initramfs per kernel: busybox, tests/vm/init and the modules that mount the
# host's root over 9p under a tmpfs overlay. Needs root. Prints the cache dir.
#   EXECBOX_VM_CACHE  the cache (default /var/cache/execbox-vm)
set -euo pipefail
# --ctest: what cannot be had here (not root, no package, apt failing) is a skip (77), with
# the reason, not a failure.
if [[ ${1:-} == --ctest ]]; then
    trap 'echo "setup: skipped: \"$BASH_COMMAND\" failed (exit $?)" >&2; exit 77' ERR
fi
here=$(cd "$(dirname "$0")" && pwd)
CACHE=${EXECBOX_VM_CACHE:-/var/cache/execbox-vm}
[[ $(id -u) -eq 0 ]] || { echo "setup: skipped: needs root (apt-get)" >&2; exit 77; }
mkdir -p "$CACHE"
export DEBIAN_FRONTEND=noninteractive
updated=0
update() { [[ $updated -eq 1 ]] || { apt-get update -qq; updated=1; }; }

mapfile -t want < <(sed 's/#.*//' "$here/../../scripts/deps/vm.apt" | tr -s ' \t' '\n' | sed '/^$/d')
missing=()
for p in "${want[@]}"; do
    [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    update
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# bookworm-backports carries the 6.12 kernel: a deb822 source beside debian.sources, on its
# mirror, when no source names that suite yet.
if ! grep -rqs '^[^#]*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    mirror=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
    cat >/etc/apt/sources.list.d/bookworm-backports.sources <<SRC
Types: deb
URIs: ${mirror:-http://deb.debian.org/debian}
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    updated=0
    update
fi

newest() { apt-cache search --names-only "$1" | cut -d' ' -f1 | sort -V | tail -1; }
declare -A pattern=([6.1]='^linux-image-6\.1\.0-[0-9]+-amd64$'
                    [6.12]='^linux-image-6\.12\.[0-9]+\+(deb12|bpo)-amd64-unsigned$')
# The modules the initramfs loads (those built in are skipped): virtio over PCI, its console
# ports, 9p over virtio, overlayfs, and the disk run.sh gives the guest's /tmp (virtio-blk,
# ext4 as Debian 12 has it; crc32c for ext4's checksums: no modprobe in the initramfs).
mods=(virtio_pci virtio_console 9pnet_virtio 9p overlay virtio_blk ext4 crc32c_generic)
# What the initramfs is made of (this script and the init): rebuilt when either changes.
key=$(cat "$here/setup.sh" "$here/init" | sha256sum | cut -d' ' -f1)
for k in 6.1 6.12; do
    pkg=$(newest "${pattern[$k]}")
    [[ -n "$pkg" ]] || { update; pkg=$(newest "${pattern[$k]}"); }
    [[ -n "$pkg" ]] || { echo "setup: no package matches ${pattern[$k]}" >&2; exit 1; }
    ver=${pkg#linux-image-}
    ver=${ver%-unsigned}
    # One dir per kernel version; lane-6.1 and lane-6.12 name the ones run.sh boots.
    dir="$CACHE/$ver"
    if [[ -f "$dir/ok" && -f "$CACHE/lane-$k" ]] && cmp -s "$here/init" "$dir/init.used" &&
        [[ $(cat "$dir/key" 2>/dev/null) == "$key" ]] &&
        [[ $(cat "$CACHE/lane-$k") == "$ver" ]]; then
        continue
    fi
    rm -f "$dir/ok"
    if [[ ! -d "$dir/pkg/lib/modules/$ver" ]]; then
        rm -rf "$dir" && mkdir -p "$dir/pkg"
        echo "setup: fetching $pkg" >&2
        (cd "$dir" && apt-get download -qq "$pkg" >/dev/null)
        dpkg-deb -x "$dir"/*.deb "$dir/pkg"
        rm -f "$dir"/*.deb
        cp "$dir/pkg/boot/vmlinuz-$ver" "$dir/vmlinuz"
        echo "$pkg" >"$dir/package"
    fi
    moddir="$dir/pkg/lib/modules/$ver"
    # The package ships no modules.dep (its postinst runs depmod on the host): make it here.
    [[ -s "$moddir/modules.dep" ]] || depmod -b "$dir/pkg" "$ver"
    ird="$dir/initrd" && rm -rf "$ird" && mkdir -p "$ird"/{bin,mods,proc,sys,dev,lower,upper,newroot,lane}
    cp /bin/busybox "$ird/bin/busybox"
    for app in sh mount umount mkdir insmod switch_root cat sleep poweroff chroot ln ls echo mknod chmod; do
        ln -s busybox "$ird/bin/$app"
    done
    install -m 0755 "$here/init" "$ird/init"
    order=()
    add() { # a module's path relative to $moddir, what it depends on first
        local m=$1 d
        for d in $(grep "^$m:" "$moddir/modules.dep" | cut -d: -f2); do add "$d"; done
        [[ " ${order[*]} " == *" $m "* ]] || order+=("$m")
    }
    for name in "${mods[@]}"; do
        m=$(grep -E "/$name\.ko(\.xz|\.zst)?:" "$moddir/modules.dep" | cut -d: -f1 || true)
        if [[ -n "$m" ]]; then
            add "$m"
        elif ! grep -qE "/$name\.ko" "$moddir/modules.builtin"; then
            echo "setup: $ver has no module $name, built in or not" >&2
            exit 1
        fi
    done
    : >"$ird/mods/order"
    for m in "${order[@]}"; do
        b=$(basename "$m")
        case "$b" in
        *.xz) xz -dc "$moddir/$m" >"$ird/mods/${b%.xz}"; b=${b%.xz} ;;
        *.zst) zstd -qdc "$moddir/$m" >"$ird/mods/${b%.zst}"; b=${b%.zst} ;;
        *) cp "$moddir/$m" "$ird/mods/$b" ;;
        esac
        echo "$b" >>"$ird/mods/order"
    done
    (cd "$ird" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$dir/initrd.cpio.gz"
    cp "$here/init" "$dir/init.used"
    echo "$key" >"$dir/key"
    touch "$dir/ok"
    echo "$ver" >"$CACHE/lane-$k"
    echo "setup: $k: $ver, modules: $(tr '\n' ' ' <"$ird/mods/order")" >&2
done
echo "$CACHE"
