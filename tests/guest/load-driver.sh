#!/bin/sh
# Loads the freshly built kernel/hpu.ko in the guest: first the modules it
# depends on (from the guest kernel's own tree), then it, with any module
# parameters given.
set -eu
ko="$HPU_TOP/kernel/hpu.ko"
modprobe -a $(modinfo -F depends "$ko" | tr ',' ' ')
insmod "$ko" "$@"
