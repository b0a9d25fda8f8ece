# SPDX-License-Identifier: MIT
"""Group norm on hpu against PyTorch on the CPU, forward and backward (ops_gnorm.cpp).

F.group_norm, torch.native_group_norm and nn.GroupNorm with and without
affine parameters, over groups of one channel, of several and of all,
odd shapes (rows of one element) and non-contiguous inputs and gradients:
outputs, each group's mean and rstd, and the gradients of input, weight
and bias, each wanted or not.  fp32 within rtol/atol 1e-5 (statistics in
double, rounded once); bf16 within rtol 3e-2, atol 5e-2 of the CPU's fp32
from the same values (each normalised value rounds to bf16).  No op may
fall back to the CPU but past the device's bound, where the fallback
answers; operands PyTorch refuses raise its errors.
"""
import copy

import pytest
import torch
import torch.nn.functional as F

import hpu_torch
from test_ops import FLOATS, HPU, TOL, check, fallback_diff

BF16_TOL = dict(rtol=3e-2, atol=5e-2)

# (input shape, groups): odd sizes, one channel per group, all in one, rows of one element.
CASES = [((2, 6, 5), 3), ((3, 4, 2, 3), 2), ((2, 6), 3), ((1, 5, 7), 5), ((2, 6, 3), 1),
         ((3, 9, 7), 3), ((2, 4, 3, 5, 2), 4)]


def tol(dtype):
    return TOL[dtype] if dtype == torch.float32 else BF16_TOL


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,groups", CASES, ids=str)
def test_functional(shape, groups, dtype):
    """Affine and not: the output and the gradients of input, weight and bias."""
    c = shape[1]
    check(lambda x, w, b: F.group_norm(x, groups, w, b, eps=1e-3), shape, (c,), (c,),
          dtype=dtype, tol=tol(dtype))
    check(lambda x: F.group_norm(x, groups), shape, dtype=dtype, tol=tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_statistics(dtype):
    """native_group_norm's mean and rstd per (n, group), F32 on the device."""
    def fn(x, w, b):
        out, mean, rstd = torch.native_group_norm(x, w, b, 3, 6, 20, 2, 1e-5)
        return out, mean.float(), rstd.float()
    check(fn, (3, 6, 4, 5), (6,), (6,), dtype=dtype, tol=tol(dtype), grad=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_non_contiguous(dtype):
    """Strided inputs straight into the kernel, and a strided gradient coming back."""
    def direct(x, w, b):
        xt = x.transpose(0, 2)  # (4, 6, 5): N 4, C 6, HxW 5
        if xt.device.type == "cpu":
            xt = xt.contiguous()  # the CPU's kernel takes contiguous inputs only
        return torch.native_group_norm(xt, w, b, 4, 6, 5, 3, 1e-5)[0]
    check(direct, (5, 6, 4), (6,), (6,), dtype=dtype, tol=tol(dtype))
    check(lambda x: F.group_norm(x.to(memory_format=torch.channels_last), 2), (2, 4, 3, 5),
          dtype=dtype, tol=tol(dtype))
    check(lambda x, w: F.group_norm(x, 3, w).transpose(0, 2), (2, 6, 5), (6,), dtype=dtype,
          tol=tol(dtype))


@pytest.mark.parametrize("wanted", ["input", "weight", "input+bias"])
def test_gradients_wanted(wanted):
    """Only the gradients autograd asks for are computed (output_mask), each right."""
    torch.manual_seed(0)
    x, w, b = torch.randn(3, 6, 7), torch.randn(6), torch.randn(6)
    cpu = [t.clone().requires_grad_(n in wanted) for t, n in zip((x, w, b), ("input", "weight",
                                                                             "bias"))]
    dev = [t.detach().to(HPU).requires_grad_(t.requires_grad) for t in cpu]
    seed = torch.randn(3, 6, 7)
    before = hpu_torch.fallback_counts()
    F.group_norm(cpu[0], 2, cpu[1], cpu[2]).backward(seed)
    F.group_norm(dev[0], 2, dev[1], dev[2]).backward(seed.to(HPU))
    assert fallback_diff(before) == {}
    for c, d in zip(cpu, dev):
        assert (c.grad is None) == (d.grad is None)
        if c.grad is not None:
            torch.testing.assert_close(d.grad.cpu(), c.grad, **TOL[torch.float32])


@pytest.mark.parametrize("dtype", FLOATS)
def test_module_training(dtype):
    """nn.GroupNorm in a small network over three SGD steps: outputs and parameters follow."""
    torch.manual_seed(1)
    cpu = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.GroupNorm(4, 8),
                              torch.nn.ReLU())
    dev = copy.deepcopy(cpu).to(HPU, dtype)
    opt_c = torch.optim.SGD(cpu.parameters(), lr=0.1)
    opt_d = torch.optim.SGD(dev.parameters(), lr=0.1)
    before = hpu_torch.fallback_counts()
    for step in range(3):
        x = torch.randn(2, 3, 6, 7) * (step + 1) + step
        yc, yd = cpu(x), dev(x.to(HPU, dtype))
        torch.testing.assert_close(yd.cpu().float(), yc.detach(), **tol(dtype))
        for opt, y in ((opt_c, yc), (opt_d, yd)):
            opt.zero_grad()
            (y * y).mean().backward()
            opt.step()
    assert fallback_diff(before) == {}, "ops fell back to the CPU"
    for c, d in zip(cpu.parameters(), dev.parameters()):
        torch.testing.assert_close(d.detach().cpu().float(), c.detach(), **tol(dtype))


def test_past_the_device_bound_falls_back():
    """More partials than the device's scratch holds: the CPU fallback answers, as PyTorch."""
    x = torch.randn(1, 1 << 19, 1)
    before = hpu_torch.fallback_counts()
    got = F.group_norm(x.to(HPU), 1 << 12)
    assert fallback_diff(before) == {"aten::native_group_norm": 1}
    torch.testing.assert_close(got.cpu(), F.group_norm(x, 1 << 12), **TOL[torch.float32])


def test_refused_as_pytorch():
    x = torch.randn(2, 6, 4, device=HPU)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(x, 4)
    with pytest.raises(RuntimeError, match="weight to be a vector of size equal to the number"):
        F.group_norm(x, 3, torch.ones(4, device=HPU))
