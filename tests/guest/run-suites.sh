#!/bin/sh
# Runs in the guest (through run-guest.sh): loads the driver, runs every
# kselftest suite in build/tests/guest, and leaves one TAP file per suite in
# $HPU_OUT.  Exits non-zero if anything failed.
set -u
echo "# guest uptime at first test: $(cut -d' ' -f1 /proc/uptime) s"
tests/guest/load-driver.sh || exit 1

status=0
for t in "$HPU_TOP"/build/tests/guest/*_test; do
	name=$(basename "$t")
	echo "# suite $name"
	"$t" >"$HPU_OUT/$name.tap" 2>&1 || status=1
	cat "$HPU_OUT/$name.tap"
done
exit $status
