# SPDX-License-Identifier: MIT
"""Transposed convolutions on hpu (ops_conv.cpp) against PyTorch on the CPU.

F.conv_transpose1d / conv_transpose2d and nn.ConvTranspose modules with
stride, padding, output_padding, dilation, groups and bias, on the device's
CONV kernels: the output and the gradients of input, weight and bias, each
only when wanted; odd and non-contiguous inputs; fp32 and bf16 within
test_conv.py's tolerances (the same sums in other orders, bf16 rounded once
from fp32); no op may fall back to the CPU.  output_padding at or past the
stride (PyTorch allows it below the dilation) is refused with a reason.
"""
import pytest
import torch
import torch.nn.functional as F

from test_conv import HPU, run_conv, train_like_cpu

FLOATS = [torch.float32, torch.bfloat16]


def run_transpose(x_shape, w_shape, bias, dtype=torch.float32, seed=0, layout=None,
                  wanted=(True, True, True), **kw):
    """conv_transpose{1,2}d(x, w, b, **kw) on hpu and CPU: output and the wanted gradients."""
    fn = F.conv_transpose2d if len(x_shape) == 4 else F.conv_transpose1d
    run_conv(x_shape, w_shape, bias, dtype, seed, layout, fn=fn,
             bias_len=w_shape[1] * kw.get("groups", 1), wanted=wanted, **kw)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kw", [
    dict(),
    dict(stride=2),
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=3, padding=2, output_padding=2, dilation=2),
    dict(stride=2, dilation=3, groups=2),
    dict(padding=1, groups=3),
], ids=str)
def test_conv_transpose2d(kw, dtype):
    cin = 6
    run_transpose((2, cin, 5, 4), (cin, 4, 3, 2), True, dtype, **kw)
    run_transpose((1, cin, 3, 7), (cin, 2, 2, 3), False, dtype, seed=1, **kw)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kw", [
    dict(),
    dict(stride=3, padding=1, output_padding=2),
    dict(stride=2, dilation=2, groups=4, padding=3),
], ids=str)
def test_conv_transpose1d(kw, dtype):
    run_transpose((3, 4, 9), (4, 3, 4), True, dtype, **kw)


def test_non_contiguous():
    run_transpose((2, 4, 6, 10), (4, 3, 3, 3), True, layout=lambda t: t[:, :, :, ::2],
                  stride=2, padding=1)
    run_transpose((5, 2, 3, 4), (5, 2, 2, 2), True,
                  layout=lambda t: t.transpose(0, 1), stride=(2, 1))


@pytest.mark.parametrize("wanted", [(False, True, True), (True, False, False),
                                    (False, False, True)], ids=str)
def test_only_some_grads(wanted):
    run_transpose((2, 4, 5, 5), (4, 2, 3, 3), True, wanted=wanted, stride=2, output_padding=1)


def test_module_trains_like_cpu():
    """A small encoder-decoder (Conv2d, ConvTranspose2d): 5 SGD steps follow the CPU's losses."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 6, 3, stride=2, padding=1), torch.nn.ReLU(),
                                torch.nn.ConvTranspose2d(6, 2, 3, stride=2, padding=1,
                                                         output_padding=1))
    x = torch.randn(3, 2, 8, 8)
    train_like_cpu(model, x, x, F.mse_loss)


def test_refusals():
    x = torch.randn(1, 2, 4, 4, device=HPU)
    w = torch.randn(2, 3, 3, 3, device=HPU)
    with pytest.raises(RuntimeError, match="output_padding 1 must be below the stride 1"):
        F.conv_transpose2d(x, w, stride=1, dilation=2, output_padding=1)
    with pytest.raises(RuntimeError):
        F.conv_transpose2d(x, torch.randn(3, 3, 3, 3, device=HPU))  # channels do not match
    with pytest.raises(RuntimeError, match="conv_transpose3d|3 spatial dims"):
        F.conv_transpose3d(torch.randn(1, 2, 3, 3, 3, device=HPU),
                           torch.randn(2, 2, 2, 2, 2, device=HPU))
