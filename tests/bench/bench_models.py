# SPDX-License-Identifier: MIT
"""bench-models: issue 24's figures for real models' building blocks, through PyTorch (hpu_torch),
in one process.  Each section prints its BENCH lines, ratios measured in this run:
  conv2d_vs_openblas      device conv2d GFLOP/s / the host's OpenBLAS im2col+sgemm on the same
                          shapes (host_models, before the guest boots)
  bf16_gemm_vs_sbgemm     device bf16 GEMM GFLOP/s / the host's bf16 GEMM with fp32 accumulation
  sdpa_memory_ratio       peak device memory of unfused attention / FusedSDPA, sequence 2048
  sdpa_vs_unfused_time    unfused attention time / FusedSDPA time
  lr_schedule_compiles    graph compilations over 100 lazy steps of a cosine LR schedule
"""
import os
import sys

import torch

import hpu_torch

TOP = os.environ.get("HPU_TOP") or os.path.join(os.path.dirname(__file__), "..", "..")


def host_value(key):
    """The last value host_models printed for key before the guest booted (0 if none)."""
    found = 0.0
    try:
        with open(os.path.join(TOP, "build", "bench-host", "models.txt")) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[0] == key:
                    found = float(parts[1])
    except OSError:
        pass
    return found


def bench(name, value):
    print(f"BENCH {name} {value:.4g}", flush=True)


# --- conv2d (section of the examples/bench engineer) ---
def conv2d():
    pass


# --- bf16 GEMM (section of the hmp engineer) ---
def bf16_gemm():
    pass


# --- FusedSDPA (section of the SDPA engineer) ---
def sdpa():
    pass


# --- LR schedule (section of the fused-optimizer engineer) ---
def lr_schedule():
    pass


def main():
    for section in (conv2d, bf16_gemm, sdpa, lr_schedule):
        section()


if __name__ == "__main__":
    main()
