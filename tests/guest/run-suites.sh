#!/bin/sh
# Runs in the guest (through run-guest.sh): loads the driver, runs every
# kselftest suite in build/tests/guest, and leaves one TAP file per suite in
# $HPU_OUT; then the runtime's suites again with it under the sanitizers
# (TAP in $HPU_OUT/san, not counted twice).  Exits non-zero if anything failed.
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

# The runtime's streams once more through the driver's SUBMIT, as without user queues.
echo "# suite stream_test with HPU_USER_QUEUES=0"
HPU_USER_QUEUES=0 "$HPU_TOP/build/tests/guest/stream_test" >"$HPU_OUT/stream_test_submit.tap" 2>&1 || status=1
cat "$HPU_OUT/stream_test_submit.tap"

# HPU graphs once more with the recipes' command buffers copied into the jobs, as without CALL.
echo "# suite graph_test with HPU_RECIPE_INLINE=1"
HPU_RECIPE_INLINE=1 "$HPU_TOP/build/tests/guest/graph_test" >"$HPU_OUT/graph_test_inline.tap" 2>&1 || status=1
cat "$HPU_OUT/graph_test_inline.tap"

# The suites that drive the runtime (not the raw-ioctl ones) once more, with it built under ASan
# and UBSan, whose runtimes an uninstrumented program must preload.  The tests' own signal
# handlers keep SIGSEGV and SIGBUS (a revoked doorbell page); their leaks are not the runtime's.
san_lib=$HPU_TOP/build/userspace-san/lib
san_rt="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
mkdir -p "$HPU_OUT/san"
clean=0
for name in runtime_test stream_test lazy_test graph_test graphed_test dynamic_test \
	disk_cache_test ops_test compute_test process_test uqueue_test; do
	if LD_LIBRARY_PATH=$san_lib LD_PRELOAD=$san_rt \
		ASAN_OPTIONS=detect_leaks=0:handle_segv=0:handle_sigbus=0 \
		"$HPU_TOP/build/tests/guest/$name" >"$HPU_OUT/san/$name.tap" 2>&1; then
		clean=$((clean + 1))
	else
		echo "# suite $name with the runtime under ASan/UBSan failed: $HPU_OUT/san/$name.tap"
		tail -30 "$HPU_OUT/san/$name.tap"
		status=1
	fi
done
echo "# runtime suites under ASan/UBSan: $clean clean"

# One epoch of the MNIST example must reach 80% test accuracy.
echo "# suite mnist"
{
	echo "TAP version 13"
	echo "1..1"
	start=$(cut -d' ' -f1 /proc/uptime)
	out=$("$HPU_TOP/build/userspace/bin/mnist" -e 1 2>&1)
	echo "$out" | sed 's/^/# /'
	echo "# $(awk -v s="$start" -v e="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { print e - s }') s"
	acc=$(echo "$out" | sed -n 's/.*test accuracy \([0-9.]*\).*/\1/p' | tail -n 1)
	if awk -v a="${acc:-0}" 'BEGIN { exit !(a >= 0.80) }'; then
		echo "ok 1 - one epoch of MNIST reaches 80% test accuracy ($acc)"
	else
		echo "not ok 1 - one epoch of MNIST reaches 80% test accuracy (${acc:-no result})"
		status=1
	fi
} >"$HPU_OUT/mnist.tap"
cat "$HPU_OUT/mnist.tap"
exit $status
