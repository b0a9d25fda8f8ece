#!/bin/sh
# Runs in the guest (through run-guest.sh): loads the driver and runs the
# named benchmarks from build/tests/bench; each prints BENCH lines.
set -eu
tests/guest/load-driver.sh
for name in "$@"; do
	"$HPU_TOP/build/tests/bench/bench_$name"
done
