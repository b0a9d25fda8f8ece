#!/usr/bin/env bash
# `make install`: the driver through DKMS (so it is rebuilt for new kernels and
# loads with `modprobe hpu`), the firmware image, and the runtime.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
ver=$(sed -n 's/^PACKAGE_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$top/dkms.conf")
src=/usr/src/hpu-$ver

# DKMS builds from a copy it keeps of the driver's sources (and only those).
dkms remove "hpu/$ver" --all >/dev/null 2>&1 || true
"$top/scripts/dkms-tree.sh" "$src"
dkms install "hpu/$ver" -k "${KVER:-$(uname -r)}"

install -D -m 0644 "$top/build/firmware/hpu/hpu-fw.bin" /lib/firmware/hpu/hpu-fw.bin
make -C "$top/userspace" O="$top/build/userspace" install PREFIX="${PREFIX:-/usr/local}"
ldconfig
