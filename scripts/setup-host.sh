#!/usr/bin/env bash
# Installs what building and testing hpu needs, from Debian's archive only.
# Idempotent and quick when nothing is missing, so every `make` runs it.
# Packages given as arguments are installed too (build-debug-kernel.sh's).
set -euo pipefail

pkgs=(
	# guest kernel and the headers our module builds against (same version)
	linux-image-amd64 linux-headers-amd64 kmod
	# kselftest_harness.h comes from the kernel source tarball
	linux-source-6.1
	# QEMU 7.2 from Debian's source package, built with ccache
	dpkg-dev patch ccache meson ninja-build pkg-config flex bison python3-venv
	libglib2.0-dev libpixman-1-dev zlib1g-dev libfdt-dev libcap-ng-dev libattr1-dev
	# guest firmware (SeaBIOS, option ROMs) and the initramfs
	seabios qemu-system-data busybox-static cpio
	# the device model's matrix engine
	libopenblas-dev
	# runtime, tools and tests
	libdrm-dev libpci-dev pciutils
	# the PyTorch bridge (userspace/pytorch) and its tests
	# (pybind11-dev: python3-torch only recommends it, and recommends are not installed)
	g++ python3-torch libtorch-dev pybind11-dev python3-numpy python3-pytest
	# installing the module
	dkms
	dataset-fashion-mnist # the MNIST and ResNet examples' data set
	"$@"
)

src_list=/etc/apt/sources.list.d/hpu-deb-src.sources
need_update=

# `apt-get source qemu` needs a deb-src entry for the archive we install from.
if ! grep -qsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/*; then
	cat >"$src_list" <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	need_update=1
fi

installed=" $(dpkg-query -W -f='${Package}=${db:Status-Status} ' "${pkgs[@]}" 2>/dev/null || true)"
missing=()
for p in "${pkgs[@]}"; do
	[[ "$installed" == *" $p=installed "* ]] || missing+=("$p")
done

if [ -n "$need_update" ] || [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || { echo "setup: need root to install: ${missing[*]}" >&2; exit 1; }
	echo "setup: installing ${missing[*]:-(deb-src entry only)}"
	# Two builds may set up at once (the debug kernel's and the tree's): wait for the other.
	apt-get -o DPkg::Lock::Timeout=900 update -q >/dev/null
	[ ${#missing[@]} -eq 0 ] || DEBIAN_FRONTEND=noninteractive \
		apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends \
		"${missing[@]}" >/dev/null
fi
