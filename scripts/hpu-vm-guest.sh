#!/usr/bin/env bash
# Runs in the guest, as root, for scripts/hpu-vm (through tests/guest/run-guest.sh, which has
# shared DIR and IO writable): loads the driver, gives its node to group GID, and runs CMD in DIR
# as user UID with only the environment NAME=VALUE..., its output appended to IO/stdout and
# IO/stderr, which hpu-vm follows.  IO/started tells hpu-vm that what follows is CMD's.
#
#   hpu-vm-guest.sh UID GID GROUPS MEMLOCK DIR IO [NAME=VALUE]... -- CMD [ARGS...]
#
# GROUPS: the supplementary groups, comma-separated; MEMLOCK: RLIMIT_MEMLOCK, soft:hard, bytes.
set -u
uid=$1 gid=$2 groups=$3 memlock=$4 dir=$5 io=$6
shift 6
assign=()
while [ "$1" != -- ]; do
	assign+=("$1")
	shift
done
shift

exec 3>>"$io/stdout" 4>>"$io/stderr" || exit 1
exec 2>&4
"$HPU_TOP/tests/guest/load-driver.sh" -g "$gid" || exit 1
cd -- "$dir" || exit 1
chmod 1777 "$TMPDIR" || exit 1

user=()
[ "$uid" -eq 0 ] || user=(setpriv --reuid="$uid" --regid="$gid" --groups="$groups" --)
: >"$io/started"
exec prlimit --memlock="$memlock" "${user[@]}" env -i "${assign[@]}" "$@" \
	</dev/null >&3 2>&4 3>&- 4>&-
