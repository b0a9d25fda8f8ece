#!/usr/bin/env bash
# Builds qemu-system-x86_64 7.2 from Debian's source package with the hpu device
# compiled in, and caches the binary outside the clone.  The cache key is the
# Debian QEMU version plus a hash of qemu-device/ (the device, and patches to
# QEMU itself in qemu-device/patches), the shared headers the model includes
# and this script, so an unchanged tree never rebuilds QEMU.
# qemu-device/patches/*.patch are our changes to QEMU itself, each saying why;
# tcg-share-pcrel-blocks.patch lets TCG run a block translated for one process in
# another that maps the same library elsewhere, so a guest process does not
# translate its libraries anew (docs/PERFORMANCE.md, bench-cache).
# Usage: build-qemu.sh <output-symlink>
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: build-qemu.sh <output-symlink>}
cache=${HPU_CACHE_DIR:-/var/cache/hpu}

qver=$(apt-cache showsrc qemu | awk '/^Version:/ {print $2}' | sort -V | tail -n 1)
[ -n "$qver" ] || { echo "build-qemu: no qemu source package (deb-src missing?)" >&2; exit 1; }
source_key() {
	(cd "$top" && { find qemu-device hw/*.h uapi/drm/hpu_packets.h uapi/drm/hpu_kernels.h uapi/drm/hpu_philox.h uapi/drm/hpu_pool.h -type f -print0 |
		sort -z | xargs -0 sha256sum;
		sha256sum scripts/build-qemu.sh; } | sha256sum | cut -c1-16)
}
key=$(source_key)
dest="$cache/qemu-${qver//[:+~]/_}-$key"

# One build at a time: concurrent builds share the work tree.
mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9

if [ ! -x "$dest/qemu-system-x86_64" ]; then
	echo "build-qemu: building QEMU $qver with the hpu device (cache key $key)"
	mkdir -p "$cache/dl"
	dsc=$(ls "$cache"/dl/qemu_*.dsc 2>/dev/null | grep -F "_${qver#*:}.dsc" || true)
	if [ -z "$dsc" ]; then
		(cd "$cache/dl" && apt-get source -q --download-only "qemu=$qver" >"$cache/dl/log" 2>&1) ||
			{ cat "$cache/dl/log" >&2; exit 1; }
		dsc=$(ls "$cache"/dl/qemu_*.dsc | grep -F "_${qver#*:}.dsc")
	fi
	# Same source and build paths every time, so ccache hits across keys.
	src="$cache/work/qemu"
	bld="$cache/work/build"
	rm -rf "$src"
	mkdir -p "$cache/work"
	# Debian's signing keys are not in the keyring: dpkg-source says so and goes on.
	dpkg-source -q -x "$dsc" "$src" >"$cache/work/unpack.log" 2>&1 ||
		{ cat "$cache/work/unpack.log" >&2; exit 1; }

	# Our changes to QEMU itself (each patch says why), after Debian's own.
	for p in "$top"/qemu-device/patches/*.patch; do
		patch -d "$src" -p1 -s --forward <"$p" ||
			{ echo "build-qemu: $p does not apply to QEMU $qver" >&2; exit 1; }
	done

	# The dfsg tarball has no edk2 blobs; never try to unpack them.
	sed -i 's/unpack_edk2_blobs = bzip2.found()/unpack_edk2_blobs = false/' "$src/meson.build"

	# Our device: sources, shared headers, meson and Kconfig hooks.
	mkdir -p "$src/hw/misc/hpu"
	cp "$top"/qemu-device/core/*.[ch] "$top"/qemu-device/qemu/* "$top"/hw/*.h \
		"$top"/uapi/drm/hpu_packets.h "$top"/uapi/drm/hpu_kernels.h \
		"$top"/uapi/drm/hpu_philox.h "$top"/uapi/drm/hpu_pool.h "$src/hw/misc/hpu/"
	echo "subdir('hpu')" >> "$src/hw/misc/meson.build"
	echo "source hpu/Kconfig" >> "$src/hw/misc/Kconfig"
	cp "$top/qemu-device/hpu-devices.mak" "$src/configs/devices/x86_64-softmmu/hpu.mak"
	# Edited since the key was taken (the lock may have been held long): the
	# binary would be cached under sources it was not built from.
	[ "$(source_key)" = "$key" ] ||
		{ echo "build-qemu: the device sources changed while waiting to build; run it again" >&2; exit 1; }

	export CCACHE_BASEDIR="$cache/work" CCACHE_DIR="$cache/ccache"
	rm -rf "$bld"
	mkdir -p "$bld"
	(cd "$bld" && "$src/configure" --target-list=x86_64-softmmu \
		--cc="ccache gcc" --cxx="ccache g++" \
		--without-default-devices --with-devices-x86_64=hpu \
		--enable-virtfs --enable-tcg --disable-docs --disable-install-blobs \
		--disable-tools --disable-guest-agent --disable-gtk --disable-sdl \
		--disable-vnc --disable-opengl --disable-spice --disable-curses \
		--disable-capstone --disable-slirp --disable-werror \
		--disable-user --enable-system >/dev/null)
	ninja -C "$bld" qemu-system-x86_64 >"$cache/work/ninja.log" 2>&1 ||
		{ tail -n 40 "$cache/work/ninja.log" >&2; exit 1; }
	mkdir -p "$dest.tmp"
	cp "$bld/qemu-system-x86_64" "$dest.tmp/"
	rm -rf "$dest"
	mv "$dest.tmp" "$dest"
fi
mkdir -p "$(dirname "$out")"
ln -sfn "$dest/qemu-system-x86_64" "$out"
