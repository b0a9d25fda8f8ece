#!/usr/bin/env bash
# Builds, once, the debug kernel that `make test-debug` boots in the guest: Debian's 6.1 source
# (linux-source-6.1) with KASAN, lockdep, kmemleak, DMA-API debugging and fault injection, and
# everything the test guest and the driver need built in (scripts/debug-kernel.config), so that
# the guest loads no module but hpu.  The config starts small (x86_64_defconfig and
# kvm_guest.config, not Debian's) to keep the build short; it runs at the lowest priority, which
# on a loaded machine makes it long (docs/TESTING.md has the figures), so it resumes if stopped.
# The build tree is cached outside the clone, keyed by the source package's version and a hash
# of this script and the fragment; it keeps bzImage and what an out-of-tree module build needs
# (the tree without its objects).  <output-symlink> then names the tree: pass it as KDIR to the
# module's build, and as HPU_GUEST_KERNEL to run-guest.sh.
# Usage: build-debug-kernel.sh <output-symlink>
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: build-debug-kernel.sh <output-symlink>}
cache=${HPU_CACHE_DIR:-/var/cache/hpu}
frag=$top/scripts/debug-kernel.config
tarball=/usr/src/linux-source-6.1.tar.xz

# The source (setup-host.sh's), and what building it needs beyond: bc, libelf for objtool,
# OpenSSL for the certificate tools.
"$top/scripts/setup-host.sh" bc libelf-dev libssl-dev

srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1)
key=$(cat "$top/scripts/build-debug-kernel.sh" "$frag" | sha256sum | cut -c1-16)
dest="$cache/debug-kernel-${srcver//[:+~]/_}-$key"

# configure: in the current tree, x86_64_defconfig and kvm_guest.config, then each line of the
# fragment through scripts/config, then Kconfig resolves the rest.
configure() {
	local line v bad=0 opts=()
	make -s x86_64_defconfig kvm_guest.config >"$dest/config.log" 2>&1
	while IFS= read -r line; do
		case $line in
		CONFIG_*=y) opts+=(--enable "${line%%=*}") ;;
		CONFIG_*=n) opts+=(--disable "${line%%=*}") ;;
		CONFIG_*=\"*\") v=${line#*=}; v=${v#\"}; opts+=(--set-str "${line%%=*}" "${v%\"}") ;;
		CONFIG_*=*) opts+=(--set-val "${line%%=*}" "${line#*=}") ;;
		'' | '#'*) ;;
		*) echo "build-debug-kernel: $frag: cannot read '$line'" >&2; exit 1 ;;
		esac
	done <"$frag"
	scripts/config --file .config "${opts[@]}"
	make -s olddefconfig >>"$dest/config.log" 2>&1

	# Kconfig drops what lacks a dependency without a word: every line must have held.
	while IFS= read -r line; do
		case $line in
		CONFIG_*=n) ! grep -q "^${line%%=*}=" .config || { echo "  $line"; bad=1; } ;;
		CONFIG_*=*) grep -qxF "$line" .config || { echo "  $line"; bad=1; } ;;
		esac
	done <"$frag" >"$dest/config-mismatch.txt"
	if [ "$bad" = 1 ]; then
		echo "build-debug-kernel: the config does not hold these lines of $frag:" >&2
		cat "$dest/config-mismatch.txt" >&2
		exit 1
	fi
}

# One build at a time, apart from QEMU's lock: the two are independent.
mkdir -p "$cache"
exec 9>"$cache/debug-kernel.lock"
flock 9

# The tree is built where it stays (Kbuild's files name their paths); `done` marks it whole.  At
# the lowest priority on a loaded machine the build can outlast a session: an interrupted one
# resumes where it stopped (Kbuild rebuilds an object whose .cmd file it did not write), from a
# new extraction only if it stopped before `configured`.
if [ ! -e "$dest/done" ]; then
	echo "build-debug-kernel: building Linux $srcver for debugging (cache key $key)"
	if [ ! -e "$dest/configured" ]; then
		rm -rf "$dest"
		mkdir -p "$dest/linux"
		date +%s >"$dest/started"
		tar -xJf "$tarball" -C "$dest/linux" --strip-components=1
		(cd "$dest/linux" && configure)
		touch "$dest/configured"
	fi
	cd "$dest/linux"
	# The machine's cores are shared: the lowest priority, two jobs.
	if ! nice -n 19 make -j2 >>"$dest/build.log" 2>&1; then
		grep -E 'error|Error' "$dest/build.log" | head -n 20 >&2
		tail -n 20 "$dest/build.log" >&2
		echo "build-debug-kernel: the build failed ($dest/build.log)" >&2
		exit 1
	fi
	# An out-of-tree module build reads the headers, .config, the generated files, the host tools
	# (scripts/, objtool) and Module.symvers; not the kernel's objects, which are most of the
	# tree's size.
	find . \( -path ./scripts -o -path ./tools \) -prune -o \
		\( -name '*.o' -o -name '*.a' \) -type f -print0 | xargs -0 rm -f
	# Wall seconds from the extraction, over every run.
	echo "$(($(date +%s) - $(cat "$dest/started")))" >"$dest/build-seconds"
	touch "$dest/done"
	echo "build-debug-kernel: built in $(cat "$dest/build-seconds") s wall"
fi
mkdir -p "$(dirname "$out")"
ln -sfn "$dest/linux" "$out"
