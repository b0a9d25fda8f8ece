# SPDX-License-Identifier: MIT
"""Pooling on hpu against PyTorch on the CPU, forward and backward (ops_pool.cpp).

Max, average and adaptive average pooling in 2-d, and the 1-d forms PyTorch
builds on them: kernels, strides, padding, dilation, ceil_mode,
count_include_pad and divisor_override over odd shapes, 3-d and 4-d inputs,
non-contiguous views, fp32 and bf16; max pooling's indices equal the CPU's.
Tolerances are test_ops.py's check(): fp32 rtol/atol 1e-5 (sums in double,
rounded once), bf16 rtol 1.6e-2, atol 2e-2 against the CPU's fp32 from the
same bf16 values.  No op may fall back to the CPU; parameters PyTorch refuses
raise its own errors.
"""
import pytest
import torch
import torch.nn.functional as F

from test_ops import FLOATS, HPU, check

# (shape, kernel, stride, padding, dilation, ceil_mode)
MAX_CASES = [
    ((2, 3, 9, 11), 2, 2, 0, 1, False),
    ((1, 2, 10, 7), 3, 2, 1, 1, False),
    ((2, 1, 7, 7), 3, 2, 1, 1, True),
    ((1, 3, 12, 9), (3, 2), (1, 3), (1, 1), (2, 3), False),
    ((3, 1, 6, 11), (2, 3), (3, 2), (0, 1), (2, 1), True),
    ((2, 5, 13), (3, 2), 1, 1, 1, False),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", MAX_CASES, ids=str)
def test_max_pool2d(case, dtype):
    shape, k, s, p, d, ceil = case
    check(lambda x: F.max_pool2d(x, k, s, p, d, ceil_mode=ceil, return_indices=True),
          shape, dtype=dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_max_pool2d_non_contiguous(dtype):
    check(lambda x: F.max_pool2d(x.transpose(-1, -2), 3, 2, 1, return_indices=True),
          (2, 3, 11, 8), dtype=dtype)
    check(lambda x: F.max_pool2d(x.to(memory_format=torch.channels_last), 2),
          (2, 4, 6, 6), dtype=dtype)


def test_max_pool2d_ties():
    """Equal values in a window: the first wins, as the CPU's, and takes the gradient."""
    x = torch.tensor([[[[1.0, 3, 3, 0], [3, 2, 0, 0], [5, 5, 1, 1], [5, 5, 1, 1]]]])
    check(lambda x: F.max_pool2d(x, 2, return_indices=True), x)


# (shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
AVG_CASES = [
    ((2, 3, 9, 11), 2, 2, 0, False, True, None),
    ((1, 2, 8, 5), (3, 2), (2, 1), 1, False, True, None),
    ((1, 2, 8, 5), (3, 2), (2, 1), 1, False, False, None),
    ((2, 1, 7, 7), 3, 2, 1, True, True, None),
    ((2, 1, 7, 7), 3, 2, 1, True, False, None),
    ((3, 1, 6, 11), (2, 3), (1, 2), (1, 0), False, True, 5),
    ((2, 6, 13), (1, 4), (1, 3), (0, 2), True, False, None),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", AVG_CASES, ids=str)
def test_avg_pool2d(case, dtype):
    shape, k, s, p, ceil, include, div = case
    check(lambda x: F.avg_pool2d(x, k, s, p, ceil, include, div), shape, dtype=dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,size", [((2, 3, 7, 9), (3, 4)), ((1, 2, 5, 6), (7, 1)),
                                        ((3, 5, 5), (2, 3)), ((2, 4, 6, 6), (1, 1)),
                                        ((2, 4, 6, 6), (6, 6))], ids=str)
def test_adaptive_avg_pool2d(shape, size, dtype):
    check(lambda x: F.adaptive_avg_pool2d(x, size), shape, dtype=dtype)
    check(lambda x: F.adaptive_avg_pool2d(x.transpose(-1, -2), size), shape, dtype=dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_pool1d(dtype):
    """PyTorch builds the 1-d poolings on the 2-d ones."""
    check(lambda x: F.max_pool1d(x, 3, 2, 1, return_indices=True), (2, 3, 17), dtype=dtype)
    check(lambda x: F.max_pool1d(x, 2, ceil_mode=True), (2, 3, 9), dtype=dtype)
    check(lambda x: F.avg_pool1d(x, 4, 3, 2, ceil_mode=True), (2, 3, 17), dtype=dtype)
    check(lambda x: F.adaptive_avg_pool1d(x, 5), (2, 3, 17), dtype=dtype)


def test_modules():
    """nn modules of a small CNN's head, in eval and training."""
    pool = torch.nn.Sequential(torch.nn.MaxPool2d(3, 2, 1), torch.nn.AvgPool2d(2, ceil_mode=True),
                               torch.nn.AdaptiveAvgPool2d((2, 2)))
    check(pool, (4, 8, 15, 15))


def test_refused_as_pytorch():
    """Parameters PyTorch refuses raise its errors; one the device cannot pool says so."""
    x = torch.randn(1, 2, 3, 4, device=HPU)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.avg_pool2d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(x, 2, divisor_override=0)
    # positions -1 and 3 of a height of 3: the CPU writes -inf and an index past the plane
    with pytest.raises(RuntimeError, match="no pooling"):
        F.max_pool2d(torch.randn(1, 1, 3, 3, device=HPU), (2, 1), 1, (1, 0), (4, 1))
