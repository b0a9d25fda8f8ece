#!/bin/sh
# `make run` in the guest: load the driver the way a user would and show it.
set -eu
modprobe drm
insmod "$HPU_TOP/kernel/hpu.ko"
dmesg | grep -E '\bhpu\b' || true
"$HPU_TOP/build/userspace/bin/hpu-smi"
