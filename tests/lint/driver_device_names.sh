#!/usr/bin/env bash
# The driver (kernel/, prefix hpu_) and the device model (qemu-device/, prefix hdm_) never name a
# file or an identifier alike, so that grep and tags keep them apart.  Shared names belong in the
# contract headers (registers, firmware interface, uapi), which both include and neither defines.
# A name is what a C file defines: a macro, a struct/union/enum tag, or what a declaration starting
# in column 0 (kernel style) names: a function, a global, a typedef.  Prints TAP; run by `make test`.
set -euo pipefail
cd "$(dirname "$0")/../.."

names() {
	find "$1" -name '*.[ch]' -printf 'file %f\n'
	find "$1" -name '*.[ch]' -exec perl -ne '
		print "macro $1\n" if /^#\s*define\s+(\w+)/;
		print "tag $1\n" while /\b(?:struct|union|enum)\s+(\w+)\s*\{/g;
		print "name $1\n" if /^(?!#)[A-Za-z_][^(=;]*?\b([A-Za-z_]\w*)\s*[(\[=;]/;
	' {} + | sort -u
}

common=$(comm -12 <(names kernel | sort -u) <(names qemu-device | sort -u))
echo "1..1"
if [ -z "$common" ]; then
	echo "ok 1 - kernel/ and qemu-device/ share no file or identifier name"
else
	sed 's/^/# both define /' <<<"$common"
	echo "not ok 1 - kernel/ and qemu-device/ share file or identifier names"
	exit 1
fi
