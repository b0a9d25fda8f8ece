#!/bin/sh
# `make run` in the guest: load the driver the way a user would, show it, and train the seeds'
# MNIST through PyTorch on it (a short run of bench-torch: 40 steps in each of the five loops
# and on the CPU), printing the seeds' table.
set -eu
tests/guest/load-driver.sh
dmesg | grep -E '\bhpu\b' || true
"$HPU_TOP/build/userspace/bin/hpu-smi"
PYTHONPATH="$HPU_TOP/build/userspace/pytorch" PYTHONDONTWRITEBYTECODE=1 \
	/usr/bin/python3 tests/bench/bench_torch.py 40
