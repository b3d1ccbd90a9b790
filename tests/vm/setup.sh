#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The VM lane's parts, made once and reused: qemu and busybox (Debian's packages), Debian's own
# 6.1 (bookworm) and 6.12 (bookworm-backports) kernels, fetched with apt by name and unpacked
# into a cache (never installed on this host), and one initramfs per kernel: busybox and the
# modules that mount the host's root over 9p under a tmpfs overlay. Prints the cache dir.
set -euo pipefail
CACHE=${EXECBOX_VM_CACHE:-/var/cache/execbox-vm}
mkdir -p "$CACHE"
export DEBIAN_FRONTEND=noninteractive
if ! command -v qemu-system-x86_64 >/dev/null || ! [[ -x /bin/busybox ]]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends qemu-system-x86 busybox-static >/dev/null
fi
src=/etc/apt/sources.list.d/execbox-bookworm-backports.sources
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    cat >"$src" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt-get update -qq
fi
newest() { apt-cache search --names-only "$1" | cut -d' ' -f1 | sort -V | tail -1; }
declare -A want=([6.1]='^linux-image-6\.1\.0-[0-9]+-amd64$' [6.12]='^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$')
for k in 6.1 6.12; do
    dir="$CACHE/$k"
    if [[ -f "$dir/ok" ]]; then continue; fi
    pkg=$(newest "${want[$k]}")
    [[ -n "$pkg" ]] || { apt-get update -qq; pkg=$(newest "${want[$k]}"); }
    [[ -n "$pkg" ]] || { echo "setup: no package matches ${want[$k]}" >&2; exit 1; }
    rm -rf "$dir" && mkdir -p "$dir/pkg"
    (cd "$dir" && apt-get download -qq "$pkg" 2>&1 | grep -v unsandboxed >&2 || true)
    dpkg-deb -x "$dir"/*.deb "$dir/pkg"
    rm -f "$dir"/*.deb
    ver=$(ls "$dir/pkg/lib/modules")
    cp "$dir/pkg/boot/vmlinuz-$ver" "$dir/vmlinuz"
    echo "$ver" >"$dir/version"
    # The initramfs: busybox, the modules for virtio-pci, 9p and overlayfs (with what they
    # depend on, from modules.dep), and tests/vm/init.
    ird="$dir/initrd" && mkdir -p "$ird"/{bin,mods,proc,sys,dev,newroot,lower,upper}
    cp /bin/busybox "$ird/bin/busybox"
    moddir="$dir/pkg/lib/modules/$ver"
    # The package leaves modules.dep to its install; make it for the unpacked tree.
    depmod -b "$dir/pkg" "$ver"
    order=()
    add() { # a module's path relative to $moddir, its deps first
        local m=$1 d
        for d in $(grep "^$m:" "$moddir/modules.dep" | cut -d: -f2); do add "$d"; done
        [[ " ${order[*]} " == *" $m "* ]] || order+=("$m")
    }
    for name in virtio_pci virtio_console 9pnet_virtio 9p overlay; do
        m=$(grep -E "/$name\.ko(\.xz|\.zst)?:" "$moddir/modules.dep" | cut -d: -f1 || true)
        [[ -n "$m" ]] && add "$m"   # absent: built in
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
    touch "$dir/ok"
done
echo "$CACHE"
