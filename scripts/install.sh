#!/usr/bin/env bash
# `make install`: the driver through DKMS (so it is rebuilt for new kernels and
# loads with `modprobe hpu`), the firmware image, and the runtime.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
ver=$(sed -n 's/^PACKAGE_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$top/dkms.conf")
src=/usr/src/hpu-$ver

# DKMS builds from a copy of the sources it keeps.
dkms remove "hpu/$ver" --all >/dev/null 2>&1 || true
rm -rf "$src"
mkdir -p "$src"
(cd "$top" && git ls-files -z 2>/dev/null || find . -path ./build -prune -o -type f -print0) |
	(cd "$top" && xargs -0 cp --parents -t "$src")
dkms install "hpu/$ver" -k "${KVER:-$(uname -r)}"

install -D -m 0644 "$top/build/firmware/hpu/hpu-fw.bin" /lib/firmware/hpu/hpu-fw.bin
make -C "$top/userspace" O="$top/build/userspace" install PREFIX="${PREFIX:-/usr/local}"
ldconfig
