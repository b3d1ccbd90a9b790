#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what building, testing and running execbox need on Debian 12, once: every file
# scripts/deps/*.apt lists Debian packages (one per line, '#' comments). Does nothing when all
# are present; needs root (or sudo) only when something is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t want < <(cat scripts/deps/*.apt | sed 's/#.*//' | tr -s ' \t' '\n' | sed '/^$/d' | sort -u)
# Virtual packages that installed packages provide count as present (NodeSource's nodejs
# provides npm and conflicts with Debian's).
mapfile -t provided < <(dpkg-query -W -f='${Status}|${Provides}\n' 2>/dev/null |
    sed -n 's/^install ok installed|//p' | tr ',' '\n' | sed 's/(.*//; s/[[:space:]]//g; /^$/d' | sort -u)
missing=()
for p in "${want[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] && continue
    printf '%s\n' "${provided[@]}" | grep -qxF -- "$p" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
echo "install-deps: installing ${missing[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "install-deps: missing packages and not root: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
