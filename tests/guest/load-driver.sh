#!/bin/sh
# Loads the freshly built hpu.ko ($HPU_KO, see run-guest.sh) in the guest:
# first the modules it depends on (from the guest kernel's own tree; none on
# the debug kernel), then it, with any module parameters given.  With -g GID,
# then gives the render (or accel) node of every bound device to group GID,
# mode 0660, as udev gives a device group its nodes (devtmpfs makes them
# root's, 0600); -n skips the loading, for a module that a suite reloaded.
#
#   load-driver.sh [-g GID [-n]] [PARAM...]
set -eu
gid= load=1
while getopts g:n opt; do
	case $opt in
	g) gid=$OPTARG ;;
	n) load= ;;
	*) sed -n '9p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

if [ -n "$load" ]; then
	deps=$(modinfo -F depends "$HPU_KO" | tr ',' ' ')
	[ -z "$deps" ] || modprobe -a $deps
	insmod "$HPU_KO" "$@"
fi
[ -n "$gid" ] || exit 0

# The probe is synchronous and devtmpfs has made the node by the time insmod returns; its path
# is in the node's uevent, as udev reads it.
granted=0
for uevent in /sys/bus/pci/drivers/hpu/*/drm/renderD*/uevent \
	/sys/bus/pci/drivers/hpu/*/accel/accel*/uevent; do
	[ -e "$uevent" ] || continue
	node=/dev/$(sed -n 's/^DEVNAME=//p' "$uevent")
	chgrp "$gid" "$node"
	chmod 0660 "$node"
	granted=$((granted + 1))
done
[ "$granted" -gt 0 ] || { echo "load-driver: no hpu node to give to group $gid" >&2; exit 1; }
