#!/bin/sh
# Runs in the guest (through run-guest.sh): loads the driver and runs the
# named benchmarks from build/tests/bench (a Python one, bench_<name>.py, from
# tests/bench with hpu_torch); each prints BENCH lines.
set -eu
tests/guest/load-driver.sh
for name in "$@"; do
	if [ -f "tests/bench/bench_$name.py" ]; then
		PYTHONPATH="$HPU_TOP/build/userspace/pytorch" PYTHONDONTWRITEBYTECODE=1 \
			/usr/bin/python3 "tests/bench/bench_$name.py"
	else
		"$HPU_TOP/build/tests/bench/bench_$name"
	fi
done
