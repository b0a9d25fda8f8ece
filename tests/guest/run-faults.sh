#!/bin/sh
# Runs in the guest (through run-guest.sh, `make test-faults`): loads the driver and runs the
# fault-injection suites, root (they reload the module and write debugfs), with their figures as
# plain BENCH lines: faults_test, train_faults_test (training beside a guilty context), then
# hpu_torch's training beside one (userspace/pytorch/tests/test_train_faults.py), the module
# loaded with a 2 s job timeout, a 50 ms heartbeat and a 100 ms queue_reset_timeout_us.  TAP in
# $HPU_OUT/<suite>.tap, pytest's report in $HPU_OUT/pytorch_faults.log.
set -u
tests/guest/load-driver.sh || exit 1
rc=0
for name in faults_test train_faults_test; do
	HPU_BENCH=1 "$HPU_TOP/build/tests/guest/$name" >"$HPU_OUT/$name.tap" 2>&1 || rc=1
	cat "$HPU_OUT/$name.tap"
done

rmmod hpu && tests/guest/load-driver.sh job_timeout_ms=2000 heartbeat_ms=50 &&
	echo 100000 >/sys/module/hpu/parameters/queue_reset_timeout_us || exit 1
env PYTHONPATH="$HPU_TOP/build/userspace/pytorch" PYTHONDONTWRITEBYTECODE=1 \
	/usr/bin/python3 -m pytest -p no:cacheprovider -q -s -rfE --tap "$HPU_OUT/pytorch_faults.tap" \
	userspace/pytorch/tests/test_train_faults.py >"$HPU_OUT/pytorch_faults.log" 2>&1 || rc=1
grep '^BENCH ' "$HPU_OUT/pytorch_faults.log"
cat "$HPU_OUT/pytorch_faults.tap"
exit $rc
