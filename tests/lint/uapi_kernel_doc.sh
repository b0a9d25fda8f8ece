#!/usr/bin/env bash
# The ioctl ABI header (uapi/drm/hpu_accel.h) documents every struct and enum, and each of
# their fields, in kernel-doc, as DRM expects: the kernel's own kernel-doc script (from the
# kernel headers `make module` builds against) finds no warning and no type left out.  TAP.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
hdr=$top/uapi/drm/hpu_accel.h
kdoc=/lib/modules/$("$top/scripts/guest-kernel.sh")/build/scripts/kernel-doc
echo "1..2"
if [ ! -x "$kdoc" ]; then
	echo "not ok 1 - no $kdoc (the kernel headers: scripts/setup-host.sh installs them)"
	echo "not ok 2 - without kernel-doc"
	exit 1
fi
if warnings=$("$kdoc" -none -Werror "$hdr" 2>&1); then
	echo "ok 1 - kernel-doc of hpu_accel.h has no warning"
else
	echo "not ok 1 - kernel-doc of hpu_accel.h warns:"
	printf '%s\n' "$warnings" | sed 's/^/#   /'
fi
defined=$(sed -n 's/^\(struct\|enum\) \(drm_hpu_[a-z0-9_]*\) {$/\1 \2/p' "$hdr" | sort)
documented=$("$kdoc" -rst "$hdr" 2>/dev/null | sed -n 's/^\.\. c:type:: //p' | sort)
undocumented=$(comm -23 <(printf '%s\n' "$defined") <(printf '%s\n' "$documented"))
if [ -z "$undocumented" ]; then
	echo "ok 2 - every struct and enum of hpu_accel.h has a kernel-doc comment"
else
	echo "not ok 2 - without a kernel-doc comment:"
	printf '%s\n' "$undocumented" | sed 's/^/#   /'
fi
[ -z "$undocumented" ] && [ -z "$warnings" ]
