#!/bin/sh
# Runs in the guest (through run-guest.sh): loads the driver, runs every
# kselftest suite in build/tests/guest, and leaves one TAP file per suite in
# $HPU_OUT; then the runtime's suites again with it under the sanitizers
# (TAP in $HPU_OUT/san and $HPU_OUT/tsan, not counted twice).  Exits non-zero
# if anything failed.
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

# The runtime's streams, and its threads, once more through the driver's SUBMIT, as without user
# queues.
for name in stream_test threads_test; do
	echo "# suite $name with HPU_USER_QUEUES=0"
	HPU_USER_QUEUES=0 "$HPU_TOP/build/tests/guest/$name" >"$HPU_OUT/${name}_submit.tap" 2>&1 || status=1
	cat "$HPU_OUT/${name}_submit.tap"
done

# HPU graphs once more with the recipes' command buffers copied into the jobs, as without CALL.
echo "# suite graph_test with HPU_RECIPE_INLINE=1"
HPU_RECIPE_INLINE=1 "$HPU_TOP/build/tests/guest/graph_test" >"$HPU_OUT/graph_test_inline.tap" 2>&1 || status=1
cat "$HPU_OUT/graph_test_inline.tap"

# san_pass NAME DIR LIB PRELOAD OPTIONS SUITE...: the suites once more with the runtime built
# under a sanitizer (in LIB), whose runtime an uninstrumented program must preload; OPTIONS is
# its environment variable.  TAP in $HPU_OUT/DIR, not counted twice.
san_pass() {
	san=$1 dir=$2 lib=$3 preload=$4 options=$5
	shift 5
	mkdir -p "$HPU_OUT/$dir"
	clean=0
	for name in "$@"; do
		if env LD_LIBRARY_PATH="$lib" LD_PRELOAD="$preload" "$options" \
			"$HPU_TOP/build/tests/guest/$name" >"$HPU_OUT/$dir/$name.tap" 2>&1; then
			clean=$((clean + 1))
		else
			echo "# suite $name with the runtime under $san failed: $HPU_OUT/$dir/$name.tap"
			tail -30 "$HPU_OUT/$dir/$name.tap"
			status=1
		fi
	done
	echo "# runtime suites under $san: $clean clean"
}

# The suites that drive the runtime (not the raw-ioctl ones) under ASan and UBSan.  The tests'
# own signal handlers keep SIGSEGV and SIGBUS (a revoked doorbell page); their leaks are not
# the runtime's.
san_pass ASan/UBSan san "$HPU_TOP/build/userspace-san/lib" \
	"$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
	ASAN_OPTIONS=detect_leaks=0:handle_segv=0:handle_sigbus=0 \
	runtime_test stream_test lazy_test graph_test graphed_test dynamic_test disk_cache_test \
	ops_test compute_test process_test uqueue_test threads_test nomem_test

# The suites that use the runtime from several threads (the disk cache writes on a thread of
# its own) under ThreadSanitizer: its first report ends the test.
san_pass TSan tsan "$HPU_TOP/build/userspace-tsan/lib" "$(gcc -print-file-name=libtsan.so)" \
	TSAN_OPTIONS=halt_on_error=1:handle_segv=0:handle_sigbus=0 \
	threads_test disk_cache_test

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
