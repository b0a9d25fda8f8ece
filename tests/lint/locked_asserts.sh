#!/usr/bin/env bash
# Every driver helper named *_locked asserts its lock (lockdep_assert_held) in its body, so the
# name's promise is checked on a lockdep kernel.  TAP on stdout.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
missing=$(awk '
	# A definition: an identifier ending in _locked( at the start of a non-indented line that
	# is not a declaration.
	/^[a-z].*[a-z0-9_]+_locked\(/ && !/;[[:space:]]*$/ {
		name = $0; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
		where = FILENAME; sub(/.*\//, "kernel/", where)
		where = where ":" FNR; inbody = 1; seen = 0; next
	}
	inbody && /lockdep_assert_held/ { seen = 1 }
	inbody && /^}/ { if (!seen) print where ": " name; inbody = 0 }
' "$top"/kernel/*.c)
echo "1..1"
if [ -z "$missing" ]; then
	echo "ok 1 - every kernel/ *_locked helper asserts its lock"
else
	echo "not ok 1 - *_locked helpers without lockdep_assert_held:"
	printf '%s\n' "$missing" | sed 's/^/#   /'
fi
[ -z "$missing" ]
