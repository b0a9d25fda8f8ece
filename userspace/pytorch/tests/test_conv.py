# SPDX-License-Identifier: MIT
"""Convolutions on hpu (ops_conv.cpp) against PyTorch on the CPU, forward and backward.

Each case runs F.conv1d / F.conv2d or an nn.Conv module on hpu and on the
CPU from the same values and compares the output and the gradients of input,
weight and bias; no op of it may fall back to the CPU.  float32 within
rtol 1e-4, atol 1e-4 x the largest value: both sides sum up to a few hundred
fp32 products, in other orders.  bfloat16 runs on the device from bf16
values and is compared with the CPU's float32 result from the same values,
within rtol 1.6e-2 and atol 2^-7 x the largest value: the device rounds the
output (and each gradient) once to bf16 (2^-8), from fp32 sums.
"""
import copy

import pytest
import torch
import torch.nn.functional as F

import hpu_torch

HPU = torch.device("hpu:0")
TOL = {torch.float32: (1e-4, 1e-4), torch.bfloat16: (1.6e-2, 2.0 ** -7)}


def fallback_diff(before):
    after = hpu_torch.fallback_counts()
    return {op: n - before.get(op, 0) for op, n in after.items() if n != before.get(op, 0)}


def assert_near(got, want, dtype):
    rtol, atol = TOL[dtype]
    want = want.detach()
    scale = max(1.0, want.abs().max().item()) if want.numel() else 1.0
    torch.testing.assert_close(got.detach().cpu().float(), want, rtol=rtol, atol=atol * scale)


def run_conv(x_shape, w_shape, bias, dtype=torch.float32, seed=0, layout=None, fn=None,
             bias_len=None, wanted=(True, True, True), **kw):
    """fn(x, w, b, **kw) (conv{1,2}d unless given; a bias of bias_len, else Cout) on hpu and
    CPU: the output and the wanted gradients (of x, w, b) compared, and only those computed."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(x_shape, generator=g).to(dtype)
    w = torch.randn(w_shape, generator=g).to(dtype)
    b = torch.randn(bias_len or w_shape[0], generator=g).to(dtype) if bias else None
    fn = fn or (F.conv2d if len(x_shape) == 4 else F.conv1d)
    leaves = {}

    def forward(device):
        # Leaves of their own: the CPU's float32 copies, or the hpu copies.
        ts = [t.float().clone() if device == "cpu" else t.to(device)
              for t in (x, w, b) if t is not None]
        ts = [t.requires_grad_(want) for t, want in zip(ts, wanted)]
        leaves[device] = ts
        xin = layout(ts[0]) if layout else ts[0]
        return fn(xin, ts[1], ts[2] if bias else None, **kw)

    before = hpu_torch.fallback_counts()
    want, got = forward("cpu"), forward(HPU)
    assert got.device == HPU and got.dtype == dtype and got.shape == want.shape
    assert_near(got, want, dtype)
    seed_grad = torch.randn(want.shape, generator=g).to(dtype)
    want.backward(seed_grad.float())
    got.backward(seed_grad.to(HPU))
    for c, d in zip(leaves["cpu"], leaves[HPU]):
        assert (c.grad is None) == (d.grad is None)
        if c.grad is not None:
            assert d.grad.device == HPU and d.grad.dtype == dtype
            assert_near(d.grad, c.grad, dtype)
    assert fallback_diff(before) == {}, "ops fell back to the CPU"


# name: (input shape, weight shape, bias, conv kwargs)
CONV2D = {
    "basic": ((2, 3, 7, 9), (5, 3, 3, 3), True, {}),
    "1x1": ((1, 4, 5, 6), (2, 4, 1, 1), False, {}),
    "stride2_pad1": ((2, 3, 9, 11), (4, 3, 3, 3), True, dict(stride=2, padding=1)),
    "rect_kernel_stride": ((2, 2, 13, 8), (3, 2, 5, 3), True,
                           dict(stride=(3, 1), padding=(0, 2), dilation=(2, 1))),
    "dilation2": ((1, 2, 10, 7), (3, 2, 3, 2), False, dict(dilation=2, padding=(2, 1))),
    "stride_past_kernel": ((1, 2, 9, 9), (2, 2, 1, 2), True, dict(stride=(3, 4))),
    "groups2": ((2, 4, 6, 5), (6, 2, 3, 3), True, dict(groups=2, padding=1)),
    "depthwise": ((2, 5, 7, 7), (10, 1, 3, 3), True, dict(groups=5, stride=2, padding=1)),
    "same": ((2, 3, 6, 7), (4, 3, 3, 5), True, dict(padding="same")),
    "same_dilated": ((1, 2, 8, 8), (3, 2, 3, 3), False, dict(padding="same", dilation=2)),
    "larger": ((2, 16, 20, 18), (24, 16, 3, 3), True, dict(padding=1)),
}

CONV1D = {
    "basic": ((3, 4, 17), (5, 4, 3), True, {}),
    "stride_pad_dil_groups": ((2, 4, 20), (6, 2, 5), False,
                              dict(stride=2, padding=3, dilation=2, groups=2)),
    "depthwise": ((1, 3, 9), (3, 1, 4), True, dict(groups=3, padding=1)),
    "same": ((2, 3, 11), (4, 3, 3), True, dict(padding="same")),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("name", CONV2D)
def test_conv2d(name, dtype):
    x, w, bias, kw = CONV2D[name]
    run_conv(x, w, bias, dtype, **kw)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("name", CONV1D)
def test_conv1d(name, dtype):
    x, w, bias, kw = CONV1D[name]
    run_conv(x, w, bias, dtype, **kw)


# Non-contiguous inputs: channels last, a transposed view, every other column.
LAYOUTS = {
    "channels_last": lambda t: t.contiguous(memory_format=torch.channels_last),
    "transposed": lambda t: t.transpose(2, 3).contiguous().transpose(2, 3),
    "sliced": lambda t: t[:, :, :, ::2],
}


@pytest.mark.parametrize("name", LAYOUTS)
def test_conv2d_noncontiguous_input(name):
    run_conv((2, 3, 8, 10), (4, 3, 3, 3), True, layout=LAYOUTS[name], stride=2, padding=1)


def test_conv1d_noncontiguous_input():
    run_conv((2, 6, 9), (4, 3, 3), True, layout=lambda t: t[:, :, ::2], groups=2)


@pytest.mark.parametrize("dims", [1, 2])
def test_modules_train_like_cpu(dims):
    """nn.Conv{1,2}d + ReLU + Linear: 5 SGD steps on hpu follow the CPU's losses."""
    torch.manual_seed(0)
    conv = torch.nn.Conv1d if dims == 1 else torch.nn.Conv2d
    shape = (4, 3, 12) if dims == 1 else (4, 3, 8, 8)
    flat = 8 * (6 if dims == 1 else 16)
    model = torch.nn.Sequential(conv(3, 6, 3, padding=1), torch.nn.ReLU(),
                                conv(6, 8, 3, stride=2, padding=1, groups=2), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(flat, 5))
    x, y = torch.randn(shape), torch.randint(0, 5, (shape[0],))
    train_like_cpu(model, x, y, F.cross_entropy)


def train_like_cpu(model, x, y, loss_fn, steps=5):
    """steps of SGD on model (CPU) and a copy on hpu: the losses agree, no op falls back."""
    models = {"cpu": model, HPU: copy.deepcopy(model).to(HPU)}
    losses = {}
    before = hpu_torch.fallback_counts()
    for device, m in models.items():
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        losses[device] = []
        for _ in range(steps):
            opt.zero_grad()
            loss = loss_fn(m(x.to(device)), y.to(device))
            loss.backward()
            opt.step()
            losses[device].append(loss.item())
    assert fallback_diff(before) == {}, "ops fell back to the CPU"
    torch.testing.assert_close(torch.tensor(losses[HPU]), torch.tensor(losses["cpu"]),
                               rtol=1e-4, atol=1e-5)


def test_only_some_grads():
    """Input needing no gradient: only the weight's and bias's are computed."""
    x = torch.randn(2, 3, 6, 6)
    w = torch.randn(4, 3, 3, 3, requires_grad=True)
    wd = w.detach().to(HPU).requires_grad_()
    F.conv2d(x, w, padding=1).sum().backward()
    F.conv2d(x.to(HPU), wd, padding=1).sum().backward()
    assert_near(wd.grad, w.grad, torch.float32)


def test_misuse_errors():
    x = torch.randn(1, 4, 5, 5, device=HPU)
    with pytest.raises(RuntimeError):
        F.conv2d(x, torch.randn(2, 3, 3, 3, device=HPU))  # channels do not match
    with pytest.raises(RuntimeError):
        F.conv2d(x, torch.randn(2, 4, 7, 7, device=HPU))  # kernel larger than the input
    with pytest.raises(RuntimeError):
        F.conv2d(x, torch.randn(2, 4, 3, 3, device=HPU).bfloat16())  # mixed dtypes
    with pytest.raises(RuntimeError):
        F.conv2d(x, torch.randn(3, 2, 3, 3, device=HPU), groups=2)  # 3 out channels, 2 groups
