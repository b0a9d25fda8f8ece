#!/bin/sh
# `make run` in the guest: load the driver the way a user would and show it.
set -eu
tests/guest/load-driver.sh
dmesg | grep -E '\bhpu\b' || true
"$HPU_TOP/build/userspace/bin/hpu-smi"
