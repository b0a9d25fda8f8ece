#!/bin/sh
# Runs in the guest (through run-guest.sh, `make test-faults`): loads the driver and runs the
# fault-injection suite (faults_test, root: it reloads the module and writes debugfs) with its
# figures as plain BENCH lines; its TAP is in $HPU_OUT/faults_test.tap.
set -u
tests/guest/load-driver.sh || exit 1
HPU_BENCH=1 "$HPU_TOP/build/tests/guest/faults_test" >"$HPU_OUT/faults_test.tap" 2>&1
rc=$?
cat "$HPU_OUT/faults_test.tap"
exit $rc
