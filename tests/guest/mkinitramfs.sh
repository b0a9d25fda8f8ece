#!/usr/bin/env bash
# Builds the test guest's initramfs: static busybox, our init, and the
# modules (with their dependencies) needed to mount the host root over 9p.
# KVER - takes none, for a kernel that has them built in (build-debug-kernel.sh).
# Usage: mkinitramfs.sh KVER OUTPUT
set -euo pipefail
kver=${1:?kernel version}
out=${2:?output file}
here=$(cd "$(dirname "$0")" && pwd)

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir"/{bin,dev,proc,sys,modules,newroot}
cp /bin/busybox "$dir/bin/busybox"
cp "$here/init" "$dir/init"
chmod +x "$dir/init"

# modprobe prints dependencies first; keep the first occurrence of each.
: >"$dir/modules/order"
[ "$kver" = - ] || for m in virtio_pci 9pnet_virtio 9p; do
	modprobe -S "$kver" --show-depends "$m"
done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r ko; do
	cp "$ko" "$dir/modules/"
	basename "$ko" >>"$dir/modules/order"
done

(cd "$dir" && find . | cpio -o -H newc --quiet) | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
