# SPDX-License-Identifier: MIT
"""silu, sin, cos, erf, triu/tril, arange, RMSNorm (hpex FusedRMSNorm), mse_loss and
binary_cross_entropy_with_logits on hpu, forward and backward, against PyTorch on the CPU.

Each case goes through test_ops.check(): the same values on hpu and on the CPU, outputs
and gradients compared, no op of it falling back to the CPU.  float32 within rtol 1e-5,
atol 1e-5 (the device computes in double and rounds once; sums in another order); bfloat16
within rtol 1.6e-2, atol 2e-2 against the CPU's float32 from the same bf16 values (each
rounding 2^-8, a case rounding a few times).  triu, tril and arange are exact.
"""
import pytest
import torch
import torch.nn.functional as F

import hpu_torch
import hpu_torch.hpex.normalization as hnorm
from test_ops import FLOATS, HPU, check, fallback_diff

UNARY = {
    "silu": (F.silu, [(5, 7)]),
    "silu_inplace": (lambda a: F.silu(a * 1, inplace=True), [(3, 9)]),
    "silu_transposed": (lambda a: F.silu(a.t()), [(4, 6)]),
    "sin": (torch.sin, [(5, 7)]),
    "sin_inplace": (lambda a: (a * 3).sin_(), [(13,)]),
    "cos_strided": (lambda a: torch.cos(a[:, ::2] * 4), [(3, 10)]),
    "cos_inplace": (lambda a: (a * 1).cos_(), [(2, 3, 5)]),
    "erf": (torch.erf, [(5, 7)]),
    "erf_inplace_transposed": (lambda a: (a.t() * 1).erf_(), [(7, 3)]),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary(name, dtype):
    fn, shapes = UNARY[name]
    check(fn, *shapes, dtype=dtype)


def test_silu_large_arguments():
    """silu and its gradient stay finite and right where exp(-x) overflows."""
    x = torch.tensor([-800.0, -80.0, -20.0, 0.0, 20.0, 80.0, 800.0])
    check(F.silu, x)


TRI = {
    "triu": (lambda a: torch.triu(a), [(5, 7)]),
    "tril_diag2": (lambda a: torch.tril(a, 2), [(6, 4)]),
    "triu_neg_batched": (lambda a: torch.triu(a, -1), [(3, 4, 5)]),
    "tril_transposed": (lambda a: torch.tril(a.transpose(-1, -2), -2), [(2, 6, 5)]),
    "triu_far": (lambda a: torch.triu(a, 100), [(3, 4)]),
    "tril_inplace": (lambda a: (a * 1).tril_(1), [(4, 4)]),
    "causal_mask": (lambda a: a.masked_fill(torch.triu(torch.ones(5, 5, dtype=torch.bool,
                                                                  device=a.device), 1),
                                            float("-inf")).softmax(-1), [(2, 5, 5)]),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(TRI))
def test_triangle(name, dtype):
    fn, shapes = TRI[name]
    check(fn, *shapes, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool], ids=str)
def test_triangle_exact(dtype):
    """Integers past 2^53 and bools move unchanged."""
    a = (torch.arange(60, dtype=torch.int64) * 0x9E3779B97F4A7C1).view(3, 4, 5)
    a = a.to(dtype) if dtype != torch.bool else a % 3 == 0
    before = hpu_torch.fallback_counts()
    for k in (-2, 0, 1, 3):
        assert torch.equal(torch.triu(a.to(HPU), k).cpu(), torch.triu(a, k))
        assert torch.equal(torch.tril(a.to(HPU), k).cpu(), torch.tril(a, k))
    assert fallback_diff(before) == {}


def test_triangle_misuse():
    """Fewer than two dims: PyTorch's own error (its shape check runs before the kernel)."""
    with pytest.raises((RuntimeError, IndexError)):
        torch.triu(torch.ones(5, device=HPU))


ARANGE = [
    (0, 1, 0.1), (0.3, 7.1, 0.07), (-3, 5, 0.013), (1, 100, 0.3), (5, -5, -0.37),
    (0, 5000, 0.1),  # 50000 elements: past the CPU's grain, its threads' ranges
    (0, 17), (3, 1000, 7), (-40, 40, 3), (10,),
]


@pytest.mark.parametrize("dtype", [None, torch.float32, torch.bfloat16, torch.int64,
                                   torch.int32], ids=str)
@pytest.mark.parametrize("args", ARANGE, ids=str)
def test_arange(args, dtype):
    """torch.arange on hpu holds the CPU's values bit for bit."""
    if dtype in (torch.int64, torch.int32) and any(float(a) != int(a) for a in args):
        dtype = torch.float32
    before = hpu_torch.fallback_counts()
    got = torch.arange(*args, dtype=dtype, device=HPU)
    want = torch.arange(*args, dtype=dtype)
    assert got.device.type == "hpu" and got.dtype == want.dtype
    assert torch.equal(got.cpu(), want), (got.cpu() - want).abs().max()
    assert fallback_diff(before) == {}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_arange_threads(dtype):
    """With the CPU's loop split between threads, each range has its own lane blocks and tail."""
    threads = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        got = torch.arange(-7, 9000, 0.13, dtype=dtype, device=HPU).cpu()
        want = torch.arange(-7, 9000, 0.13, dtype=dtype)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(got, want), (got - want).abs().max()


def test_arange_out_resized():
    out = torch.empty(0, device=HPU)
    torch.arange(2, 9, 0.5, out=out)
    assert torch.equal(out.cpu(), torch.arange(2, 9, 0.5))
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        torch.arange(0, 5, 0, device=HPU)
    with pytest.raises(RuntimeError, match="inconsistent"):
        torch.arange(5, 0, 1, device=HPU)


def rms_ref(x, w, eps):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y if w is None else y * w


def check_rms(shape, dtype, weight=True, transpose=False, eps=1e-6, seed=0):
    """FusedRMSNorm on hpu against the formula on the CPU (float32), both gradients."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g).to(dtype)
    w = (torch.rand(shape[-1], generator=g) + 0.5).to(dtype) if weight else None
    grad = torch.randn(shape, generator=g).to(dtype)
    if transpose:
        x = x.transpose(0, 1).contiguous().transpose(0, 1)  # the same values, strided
    cx = x.float().clone().requires_grad_()
    cw = w.float().clone().requires_grad_() if weight else None
    dx = x.to(HPU).requires_grad_()
    dw = w.to(HPU).requires_grad_() if weight else None
    before = hpu_torch.fallback_counts()
    want = rms_ref(cx, cw, eps)
    got = hnorm.FusedRMSNorm.apply(dx, dw, eps)
    want.backward(grad.float())
    got.backward(grad.to(HPU))
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1.6e-2, atol=2e-2)
    assert got.dtype == dtype and got.device.type == "hpu"
    torch.testing.assert_close(got.cpu().float(), want.detach(), **tol)
    torch.testing.assert_close(dx.grad.cpu().float(), cx.grad, **tol)
    if weight:
        assert dw.grad.dtype == dtype
        torch.testing.assert_close(dw.grad.cpu().float(), cw.grad, **tol)
    assert fallback_diff(before) == {}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape,weight,transpose", [
    ((4, 7), True, False), ((2, 3, 5), True, True), ((9,), True, False),
    ((3, 11), False, False), ((5, 2, 6), False, True),
])
def test_fused_rms_norm(shape, weight, transpose, dtype):
    check_rms(shape, dtype, weight, transpose)


def test_fused_rms_norm_eps():
    """eps dominates tiny rows: it must be used, inside the root."""
    check_rms((3, 4), torch.float32, eps=10.0)


def test_rms_norm_module():
    torch.manual_seed(0)
    m = hnorm.RMSNorm(6, eps=1e-5)
    with torch.no_grad():
        m.weight.mul_(torch.linspace(0.5, 1.5, 6))
    x = torch.randn(2, 3, 6)
    want = m(x)
    md = hnorm.RMSNorm(6, eps=1e-5).to(HPU)
    md.load_state_dict(m.state_dict())
    got = md(x.to(HPU))
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)
    got.sum().backward()
    want.sum().backward()
    torch.testing.assert_close(md.weight.grad.cpu(), m.weight.grad, rtol=1e-5, atol=1e-5)


def test_fused_rms_norm_misuse():
    x = torch.randn(3, 4, device=HPU)
    with pytest.raises(RuntimeError, match="weight must be"):
        hnorm.FusedRMSNorm.apply(x, torch.ones(5, device=HPU), 1e-6)
    with pytest.raises(RuntimeError, match="eps"):
        hnorm.FusedRMSNorm.apply(x, None, -1.0)
    with pytest.raises(RuntimeError, match="floating hpu tensor"):
        hnorm.FusedRMSNorm.apply(torch.ones(3, 4, dtype=torch.int64, device=HPU), None, 1e-6)
    with pytest.raises(RuntimeError, match="runs on hpu"):
        hnorm.FusedRMSNorm.apply(torch.randn(3, 4), None, 1e-6)


LOSSES = {
    "mse_mean": (lambda a, b: F.mse_loss(a, b), [(5, 7), (5, 7)]),
    "mse_sum": (lambda a, b: F.mse_loss(a, b, reduction="sum"), [(13,), (13,)]),
    "mse_none_transposed": (lambda a, b: F.mse_loss(a.t(), b, reduction="none"),
                            [(4, 3), (3, 4)]),
    "bce_mean": (lambda a, b: F.binary_cross_entropy_with_logits(a * 4, b.sigmoid()),
                 [(5, 7), (5, 7)]),
    "bce_none": (lambda a, t: F.binary_cross_entropy_with_logits(a, t.to(a.dtype),
                                                                 reduction="none"),
                 [(3, 5), torch.rand(3, 5, generator=torch.Generator().manual_seed(4)) > 0.5]),
    # Targets, weights and pos_weight without gradients (integral specs: check() leaves
    # them be): PyTorch has no weight derivative, and the target's with pos_weight is
    # log_sigmoid's, not this suite's.
    "bce_weight_pos_weight": (
        lambda a, t, w, pw: F.binary_cross_entropy_with_logits(
            a[:, ::2], t.to(a.dtype), weight=w.to(a.dtype), pos_weight=pw.to(a.dtype) / 2,
            reduction="sum"),
        [(4, 10), torch.rand(4, 5, generator=torch.Generator().manual_seed(3)) > 0.5,
         torch.tensor([1, 2, 3, 1, 2]), torch.tensor([1, 4, 2, 3, 6])]),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(LOSSES))
def test_loss(name, dtype):
    fn, shapes = LOSSES[name]
    check(fn, *shapes, dtype=dtype)


def test_bce_stable_for_large_logits():
    """Logits of +-100 give finite losses and gradients (the stable form)."""
    x = torch.tensor([-100.0, -30.0, 0.0, 30.0, 100.0])
    y = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0])
    check(lambda a: F.binary_cross_entropy_with_logits(a, y.to(a.device), reduction="none"), x)


class TinyGPT(torch.nn.Module):
    """One causal attention layer with RMSNorm and a SiLU MLP: every op of this file in use."""

    def __init__(self, vocab=11, dim=8, seq=6):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Embedding(seq, dim)
        self.norm = hnorm.RMSNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.up = torch.nn.Linear(dim, 2 * dim)
        self.head = torch.nn.Linear(2 * dim, vocab)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.tok(tokens) + self.pos(torch.arange(t, device=tokens.device))
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), 1)
        att = (q @ k.transpose(-2, -1) / 8 ** 0.5).masked_fill(mask, float("-inf")).softmax(-1)
        h = F.silu(self.up(x + att @ v))
        return self.head(h), h


def test_tiny_gpt_trains_as_on_the_cpu():
    """Five SGD steps on hpu follow the CPU's losses (fp32, rtol 1e-4), nothing falling back."""
    torch.manual_seed(0)
    cpu = TinyGPT()
    dev = TinyGPT().to(HPU)
    dev.load_state_dict(cpu.state_dict())
    opts = [torch.optim.SGD(m.parameters(), lr=0.5) for m in (cpu, dev)]
    tokens = torch.randint(0, 11, (3, 6), generator=torch.Generator().manual_seed(1))
    targets = tokens.roll(-1, dims=1)
    before = hpu_torch.fallback_counts()
    for step in range(5):
        losses = []
        for m, opt, device in ((cpu, opts[0], "cpu"), (dev, opts[1], HPU)):
            logits, h = m(tokens.to(device))
            loss = (F.cross_entropy(logits.reshape(-1, 11), targets.to(device).reshape(-1)) +
                    0.1 * F.mse_loss(h, torch.zeros_like(h)))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[1] == pytest.approx(losses[0], rel=1e-4), f"step {step}: {losses}"
    assert fallback_diff(before) == {}
