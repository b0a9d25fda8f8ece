#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Checks that libhpu's layers include downward only: a file of lib/<layer>/
# may include the header of its own layer or of one below, in the order of
# README.md.  Prints TAP (one test per layer folder); exits 1 on an upward
# include, an include of another layer's file other than its header, or a
# folder not in the order.
#
#   tests/lint/libhpu_layers.sh [LIBDIR]
set -u
lib=${1:-$(dirname "$0")/../../userspace/lib}
order="util core mem submit ops recipe graph top"

rank() {
	i=0
	for l in $order; do
		[ "$l" = "$1" ] && { echo $i; return; }
		i=$((i + 1))
	done
	echo -1
}

n=0
fail=0
echo "1..$(find "$lib" -mindepth 1 -maxdepth 1 -type d | wc -l)"
for dir in "$lib"/*/; do
	layer=$(basename "$dir")
	own=$(rank "$layer")
	n=$((n + 1))
	bad=""
	[ "$own" -ge 0 ] || bad="a folder not in the order ($order)"
	# Every quoted include of the layer's files: "../<layer>/<file>" or "<file>" of its own folder.
	for inc in $(grep -ho '^#include "[^"]*"' "$dir"*.[ch] | sed 's/^#include "\(.*\)"$/\1/' | sort -u); do
		case $inc in
		../*/*) to=${inc#../}; file=${to#*/}; to=${to%%/*} ;;
		*) to=$layer; file=$inc ;;
		esac
		r=$(rank "$to")
		if [ "$r" -lt 0 ] || [ "$r" -gt "$own" ]; then
			bad="$bad${bad:+, }$inc (upward)"
		elif [ "$to" != "$layer" ] && [ "$file" != "$to.h" ]; then
			bad="$bad${bad:+, }$inc (not the layer's header)"
		fi
	done
	if [ -z "$bad" ]; then
		echo "ok $n - $layer includes downward only"
	else
		echo "not ok $n - $layer includes $bad"
		fail=1
	fi
done
exit $fail
