# SPDX-License-Identifier: MIT
"""Batch norm on hpu against PyTorch on the CPU, forward and backward (ops_bnorm.cpp).

F.batch_norm and nn.BatchNorm1d/2d in training (batch statistics, running
statistics updated over several steps with momentum and the unbiased
variance, or cumulative with momentum None) and in eval (running
statistics), with and without affine parameters and running statistics,
over odd shapes and non-contiguous inputs: outputs, running statistics and
the gradients of input, weight and bias.  fp32 within rtol/atol 1e-5
(statistics in double, rounded once); bf16 modules within rtol 3e-2, atol
5e-2 of the CPU's fp32 module from the same values (each normalised value
rounds to bf16, and the statistics of bf16 inputs carry their rounding).
No op may fall back to the CPU; operands PyTorch refuses raise its errors.
"""
import copy

import pytest
import torch
import torch.nn.functional as F

import hpu_torch
from test_ops import FLOATS, HPU, TOL, check, fallback_diff

BF16_TOL = dict(rtol=3e-2, atol=5e-2)


def tol(dtype):
    return TOL[dtype] if dtype == torch.float32 else BF16_TOL


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(6, 3), (4, 5, 7), (3, 2, 5, 9), (2, 3, 1, 1)], ids=str)
def test_functional_training(shape, dtype):
    """Batch statistics; gradients of input, weight and bias; no running statistics."""
    c = shape[1]
    check(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), shape, (c,), (c,),
          dtype=dtype, tol=tol(dtype))
    check(lambda x: F.batch_norm(x, None, None, training=True), shape, dtype=dtype,
          tol=tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_functional_eval(dtype):
    """Running statistics normalise; the gradient of input is the affine map's."""
    rm, rv = torch.randn(5), torch.rand(5) + 0.5
    check(lambda x, w, b: F.batch_norm(x, rm.to(x.device, x.dtype), rv.to(x.device, x.dtype),
                                       w, b, training=False, eps=1e-3),
          (3, 5, 4, 6), (5,), (5,), dtype=dtype, tol=tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_non_contiguous(dtype):
    check(lambda x: F.batch_norm(x.transpose(0, 2), None, None, training=True), (5, 3, 4, 2),
          dtype=dtype, tol=tol(dtype))
    check(lambda x: F.batch_norm(x.to(memory_format=torch.channels_last), None, None,
                                 training=True), (3, 4, 5, 6), dtype=dtype, tol=tol(dtype))


def steps(module, shape, n, dtype, seed=0):
    """n training steps of module (a copy on hpu and the original on the CPU), then one in eval.

    Returns the pairs (cpu, hpu) of every step's output and input gradient, and the modules.
    """
    dev = copy.deepcopy(module).to(HPU, dtype)
    pairs = []
    g = torch.Generator().manual_seed(seed)
    before = hpu_torch.fallback_counts()
    for step in range(n + 1):
        if step == n:
            module.eval()
            dev.eval()
        x = (torch.randn(shape, generator=g) * (step + 1) + step).to(dtype)
        seed_grad = torch.randn(shape, generator=g)
        xc = x.float().clone().requires_grad_()
        xd = x.to(HPU).requires_grad_()
        yc, yd = module(xc), dev(xd)
        yc.backward(seed_grad)
        yd.backward(seed_grad.to(HPU, dtype))
        pairs += [(yc, yd), (xc.grad, xd.grad)]
    assert fallback_diff(before) == {}, "ops fell back to the CPU"
    return pairs, module, dev


def expect_close(pairs, module, dev, dtype):
    for want, got in pairs:
        torch.testing.assert_close(got.cpu().float(), want.detach(), **tol(dtype))
    for (name, want), got in zip(module.named_buffers(), dev.buffers()):
        assert got.device == HPU
        if name == "num_batches_tracked":
            assert torch.equal(got.cpu(), want), name
        else:
            torch.testing.assert_close(got.cpu().float(), want, **tol(dtype), msg=name)
    for want, got in zip(module.parameters(), dev.parameters()):
        torch.testing.assert_close(got.grad.cpu().float(), want.grad, **tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("momentum", [0.1, 0.7, None], ids=str)
def test_module_running_stats(momentum, dtype):
    """nn.BatchNorm2d over four training steps and one in eval: running statistics follow."""
    module = torch.nn.BatchNorm2d(3, momentum=momentum)
    with torch.no_grad():
        module.weight.uniform_(0.5, 1.5)
        module.bias.uniform_(-1, 1)
    expect_close(*steps(module, (4, 3, 5, 7), 4, dtype), dtype)


@pytest.mark.parametrize("module,shape", [
    (torch.nn.BatchNorm1d(5), (7, 5)),
    (torch.nn.BatchNorm1d(4, affine=False), (3, 4, 9)),
    (torch.nn.BatchNorm2d(2, track_running_stats=False), (3, 2, 3, 3)),
    (torch.nn.BatchNorm2d(6, eps=1e-2), (2, 6, 1, 5)),
], ids=str)
def test_modules(module, shape):
    expect_close(*steps(module, shape, 3, torch.float32), torch.float32)


def test_refused_as_pytorch():
    x = torch.randn(2, 3, 4, device=HPU)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(x, None, None, training=False)
    with pytest.raises(RuntimeError, match="weight should contain 3 elements not 4"):
        F.batch_norm(x, None, None, torch.ones(4, device=HPU), training=True)
