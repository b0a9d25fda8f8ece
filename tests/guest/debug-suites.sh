#!/bin/sh
# Runs in the guest booted on the debug kernel (tests/run-debug.sh): the in-guest suites through
# run-suites.sh (every build/tests/guest/*_test, the fault-injection, fuzzing and torture ones
# among them; with -a also the runtime's own passes, which run-suites.sh -k leaves out), which
# ends by unloading the module; then ioctl_fuzz_test under the kernel's failslab (-F), the
# module loaded again for it and unloaded after; then a kmemleak scan, whose reports go to the
# kernel log and to $HPU_OUT/kmemleak.txt.  The other checkers (KASAN, lockdep, DMA-API) report
# in the kernel log as they find; DMA-API debugging only its first error, so its count of them
# all goes to $HPU_OUT/dma-api-errors.  Leaves the guest's uptime at its start in
# $HPU_OUT/boot-seconds.
# Exits non-zero if a suite failed.
#
#   debug-suites.sh [-a]
set -u
cut -d' ' -f1 /proc/uptime >"$HPU_OUT/boot-seconds"
echo "# debug kernel $(uname -r), up $(cat "$HPU_OUT/boot-seconds") s"
leaks=/sys/kernel/debug/kmemleak verbose=/sys/module/kmemleak/parameters/verbose

# What boot left unreferenced is the kernel's, not the suites': scanned quietly, kept in
# boot-kmemleak.txt and marked seen, so that the scan at the end reports only what came after.
if ! { echo 0 >$verbose && echo scan >$leaks; }; then
	echo "debug-suites: kmemleak is off" >&2
	exit 1
fi
cat $leaks >"$HPU_OUT/boot-kmemleak.txt"
echo clear >$leaks

status=0
if [ "${1:-}" = -a ]; then
	tests/guest/run-suites.sh || status=1
else
	tests/guest/run-suites.sh -k || status=1
fi

# The ioctl fuzzer once more, its first phase under the kernel's failslab (ioctl_fuzz_test -F):
# the slab allocations of its threads and children, not only the driver's, fail at random; its
# checks (every errno documented, or -ENOMEM; a clean log; debugfs "usage" back at zero; an
# unload without a warning) as in make test.  TAP in ioctl_fuzz_test_failslab.tap; the module
# unloaded again after it.
echo "# suite ioctl_fuzz_test under failslab"
fuzz_tap=$HPU_OUT/ioctl_fuzz_test_failslab.tap
if tests/guest/load-driver.sh; then
	"$HPU_TOP/build/tests/guest/ioctl_fuzz_test" -F -n 40000 >"$fuzz_tap" 2>&1 || status=1
	cat "$fuzz_tap"
	unloaded=
	for try in 1 2 3 4 5 6 7 8 9 10; do
		rmmod hpu 2>/dev/null && { unloaded=1; break; }
		sleep 1
	done
	[ -n "$unloaded" ] || { echo "debug-suites: rmmod hpu failed after the fuzzer" >&2; status=1; }
else
	echo "debug-suites: cannot load the driver for the fuzzer under failslab" >&2
	status=1
fi

# An object is reported once it is 5 s old, and the module's last frees may wait for an RCU
# grace period or a work item: wait a little longer, then scan, with each report in the log.
sleep 10
echo 1 >$verbose
echo scan >$leaks
cat $leaks >"$HPU_OUT/kmemleak.txt"
echo "# kmemleak: $(grep -c '^unreferenced object' "$HPU_OUT/kmemleak.txt") suspects at the end"
cat /sys/kernel/debug/dma-api/error_count >"$HPU_OUT/dma-api-errors"
echo "# DMA-API debugging: $(cat "$HPU_OUT/dma-api-errors") errors"
exit $status
