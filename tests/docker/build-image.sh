#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the docker backend's test image rootfs tarball once per machine: a minbase Debian
# bookworm with python3, from the machine's configured Debian mirror (debootstrap), cached as
# $CACHE/rootfs.tar. Usage: build-image.sh CACHE_DIR. Prints the seconds the build took.
set -euo pipefail
cache=${1:?cache dir}
tar_out=$cache/rootfs.tar
[[ -s $tar_out ]] && exit 0
mkdir -p "$cache"
# The first Debian main mirror that apt is configured with (deb822 .sources or one-line lists).
mirror=$( { cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ {for (i = 2; i <= NF; i++) print $i}';
            cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
              awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^(http|https|file):/) {print $i; break}}'; } |
          grep -v -- '-security' | grep -E '/debian/?$' | head -n1 || true)
mirror=${mirror:-http://deb.debian.org/debian}
start=$(date +%s)
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
debootstrap --variant=minbase --include=python3 bookworm "$work/root" "$mirror" >"$work/log" 2>&1 ||
    { tail -n 20 "$work/log" >&2; exit 1; }
# Nothing the sandbox needs: apt caches and docs only make the image bigger.
rm -rf "$work"/root/var/cache/apt/archives/*.deb "$work"/root/var/lib/apt/lists/* \
       "$work"/root/usr/share/doc/* "$work"/root/usr/share/man/*
tar -C "$work/root" --numeric-owner -cf "$work/rootfs.tar" .
mv "$work/rootfs.tar" "$tar_out"
echo "build-image: rootfs built from $mirror in $(( $(date +%s) - start ))s" >&2
