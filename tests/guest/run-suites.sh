#!/bin/sh
# Runs in the guest (through run-guest.sh): loads the driver, runs every
# kselftest suite in build/tests/guest, and leaves one TAP file per suite in
# $HPU_OUT; then the runtime's suites again with it under the sanitizers
# (TAP in $HPU_OUT/san and $HPU_OUT/tsan, not counted twice); then checks that
# the driver holds nothing and unloads it ($HPU_OUT/teardown.tap).  Exits
# non-zero if anything failed.  With -k, the suites that test the kernel's side only: not the
# runtime's runs under the sanitizers, MNIST or PyTorch (tests/guest/run-debug.sh, which runs
# this on the debug kernel, where these would take long and check nothing more of the kernel).
set -u
kernel_only=
[ "${1:-}" != -k ] || kernel_only=1
echo "# guest uptime at first test: $(cut -d' ' -f1 /proc/uptime) s"

# The suites run as an ordinary user, as the runtime's users do, so that every permission check
# and the driver's limit on pinned memory are real: uid 2000 (its own group 2000) in the device
# group 2001, which owns the device's node (mode 0660, load-driver.sh -g, as udev would), no
# capabilities, and the RLIMIT_MEMLOCK Debian gives a user (8 MiB; set, not inherited).  The
# guest's /etc is the host's, read-only: the ids are numbers.
user_uid=2000 user_gid=2000 dev_gid=2001 user_memlock=$((8 << 20))
# The suites that need root, which keep it:
# - lifecycle_test loads, unloads, unbinds and rebinds the module, writes the firmware loader's
#   path (sysfs) and reads the kernel log;
# - uqueue_test reloads the module (job_timeout_ms=300, for the watchdog), reads the kernel log
#   and holds back the device's interrupts (its MSI-X function mask, in config space);
# - sched_test reloads the module (job_timeout_ms=300), sets queue_reset_timeout_us (sysfs) and
#   reads the queues' registers (debugfs) and the kernel log;
# - limits_test writes the module's shares (sysfs), reads debugfs "usage" and runs a child as
#   another user;
# - hostile_test runs its hostile and its victim as two users of the device group (uid 2002 and
#   this user, with this RLIMIT_MEMLOCK), since a user's shares are its own;
# - ioctl_fuzz_test writes the driver's allocation-failure knobs (debugfs), reads "usage" and the
#   kernel log, and unloads the module;
# - torture_test takes the device away with work in flight (unbind, PCI remove, QEMU's
#   device_del: run-guest.sh -p) and brings it back, unloads and loads the module, and reads
#   the kernel log;
# - faults_test reloads the module (short job timeout and heartbeat), injects faults through
#   debugfs and reads the kernel log;
# - train_faults_test reloads the module (short job timeout and heartbeat) and injects faults
#   through debugfs into a guilty file's context while a child trains.
root_suites="lifecycle_test uqueue_test sched_test limits_test hostile_test"
root_suites="$root_suites ioctl_fuzz_test torture_test faults_test train_faults_test"

needs_root() {
	case " $root_suites " in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

# run NAME CMD...: CMD, a run of suite NAME, as root if NAME needs it, else as the user.
run() {
	if needs_root "$1"; then
		shift
		"$@"
		rc=$?
		# It may have reloaded the module: the new node is root's again.
		tests/guest/load-driver.sh -n -g "$dev_gid" || rc=1
		return $rc
	fi
	shift
	prlimit --memlock="$user_memlock:$user_memlock" \
		setpriv --reuid="$user_uid" --regid="$user_gid" --groups="$dev_gid" -- "$@"
}

tests/guest/load-driver.sh -g "$dev_gid" || exit 1
# The user writes the results share (lazy_test's metrics) and TMPDIR.
chown "$user_uid:$user_gid" "$HPU_OUT" && chmod 1777 "$TMPDIR" || exit 1

status=0
for t in "$HPU_TOP"/build/tests/guest/*_test; do
	name=$(basename "$t")
	echo "# suite $name as $(needs_root "$name" && echo root || echo "uid $user_uid")"
	run "$name" "$t" >"$HPU_OUT/$name.tap" 2>&1 || status=1
	cat "$HPU_OUT/$name.tap"
done

# The runtime's streams, and its threads, once more through the driver's SUBMIT, as without user
# queues.
for name in stream_test threads_test; do
	echo "# suite $name with HPU_USER_QUEUES=0"
	run "$name" env HPU_USER_QUEUES=0 "$HPU_TOP/build/tests/guest/$name" \
		>"$HPU_OUT/${name}_submit.tap" 2>&1 || status=1
	cat "$HPU_OUT/${name}_submit.tap"
done

# HPU graphs once more with the recipes' command buffers copied into the jobs, as without CALL.
echo "# suite graph_test with HPU_RECIPE_INLINE=1"
run graph_test env HPU_RECIPE_INLINE=1 "$HPU_TOP/build/tests/guest/graph_test" \
	>"$HPU_OUT/graph_test_inline.tap" 2>&1 || status=1
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
		if run "$name" env LD_LIBRARY_PATH="$lib" LD_PRELOAD="$preload" "$options" \
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

# The runtime's own checks, which test user space: not with -k.
if [ -z "$kernel_only" ]; then
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
		out=$(run mnist "$HPU_TOP/build/userspace/bin/mnist" -e 1 2>&1)
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

	# hpu_torch's tests (userspace/pytorch/tests), in one Python process since importing torch
	# alone takes 20-30 s here, from the host's build tree; pytest's own report is in
	# pytorch.log.  Not test_train_faults.py, which injects faults (root): run-faults.sh runs it.
	# --tap=FILE in one word: pytest reads the command line before it knows the conftest's
	# options, and "--tap FILE --ignore=..." loses the conftest (unrecognized --tap).
	echo "# suite pytorch"
	start=$(cut -d' ' -f1 /proc/uptime)
	run pytorch env PYTHONPATH="$HPU_TOP/build/userspace/pytorch" PYTHONDONTWRITEBYTECODE=1 \
		/usr/bin/python3 -m pytest -p no:cacheprovider -q -rfE --tap="$HPU_OUT/pytorch.tap" \
		--ignore=userspace/pytorch/tests/test_train_faults.py \
		userspace/pytorch/tests >"$HPU_OUT/pytorch.log" 2>&1 ||
		{ status=1; tail -40 "$HPU_OUT/pytorch.log"; }
	cat "$HPU_OUT/pytorch.tap"
	echo "# pytorch: $(awk -v s="$start" -v e="$(cut -d' ' -f1 /proc/uptime)" \
		'BEGIN { print e - s }') s"
fi

# Every suite's files are closed: the driver must hold nothing of theirs (its debugfs "usage":
# open contexts with their ASIDs, HBM (freed HBM too until it is zeroed), files' HBM and
# page-table pages, users charged, pinned host pages; a file's last references may go a moment
# after its process), and the module must unload (its messages, a WARN at unload too, are in the
# kernel log that run-guest.sh checks).  The driver's own page tables (mmu_tables) stay until it
# unloads, and hpu_mmu_fini() warns of any left.
echo "# teardown"
{
	echo "TAP version 13"
	echo "1..2"
	for try in 1 2 3 4 5 6 7 8 9 10; do
		usage=$(cat /sys/kernel/debug/hpu/*/usage 2>&1)
		held=$(echo "$usage" | awk -v names="contexts hbm_used file_hbm file_tables users host_pinned" '
			BEGIN { n = split(names, want) }
			{ v[$1] = $2 }
			END { for (i = 1; i <= n; i++) if (v[want[i]] != "0") print want[i], v[want[i]] }')
		[ -z "$held" ] && break
		sleep 1
	done
	echo "$usage" | sed 's/^/# /'
	if [ -z "$held" ]; then
		echo "ok 1 - the driver holds nothing once every file is closed"
	else
		echo "$held" | sed 's/^/# still held: /'
		echo "not ok 1 - the driver holds nothing once every file is closed"
		status=1
	fi
	# A closed file's job fences hold the module until a grace period after they are freed.
	unloaded=
	for try in 1 2 3 4 5 6 7 8 9 10; do
		out=$(rmmod hpu 2>&1) && { unloaded=1; break; }
		sleep 1
	done
	if [ -n "$unloaded" ]; then
		echo "ok 2 - rmmod hpu"
	else
		echo "$out" | sed 's/^/# /'
		echo "not ok 2 - rmmod hpu"
		status=1
	fi
} >"$HPU_OUT/teardown.tap"
cat "$HPU_OUT/teardown.tap"
exit $status
