#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Checks that libhpu's layers call downward only, as libhpu_layers.sh checks
# their includes: every hpu_ symbol a layer's objects use must be defined in
# its own layer or one below (README.md's order).  A prototype declared by
# hand, or a hook called by name, would pass the include check but not this.
# Prints TAP (one test per layer); exits 1 on an upward call or if the
# library is not built.
#
#   tests/lint/libhpu_calls.sh [OBJDIR]
set -u
top=$(dirname "$0")/../..
obj=${1:-$top/build/userspace/obj/lib}
order="util core mem submit ops recipe graph top"

if ! ls "$obj"/*/*.o >/dev/null 2>&1; then
	echo "1..0 # no objects under $obj: run make first"
	exit 1
fi
defs=$(mktemp)
trap 'rm -f "$defs"' EXIT
# layer rank, symbol: what each layer defines.
i=0
for l in $order; do
	gcc-nm --defined-only "$obj/$l"/*.o 2>/dev/null | awk -v r=$i '$3 ~ /^hpu_/ { print r, $3 }'
	i=$((i + 1))
done >"$defs"

echo "1..$(echo $order | wc -w)"
n=0
fail=0
for l in $order; do
	bad=$(gcc-nm -u "$obj/$l"/*.o 2>/dev/null | awk '$2 ~ /^hpu_/ { print $2 }' | sort -u |
		awk -v own=$n 'NR == FNR { if (!($2 in r) || $1 < r[$2]) r[$2] = $1; next }
			$1 in r && r[$1] > own { printf "%s%s", sep, $1; sep = ", " }' "$defs" -)
	n=$((n + 1))
	if [ -z "$bad" ]; then
		echo "ok $n - $l calls downward only"
	else
		echo "not ok $n - $l calls upward: $bad"
		fail=1
	fi
done
exit $fail
