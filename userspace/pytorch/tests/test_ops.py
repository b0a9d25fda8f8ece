# SPDX-License-Identifier: MIT
"""The kernels registered at the HPU key, forward and backward, against PyTorch on the CPU.

Each case runs a function on hpu and on the CPU from the same values and
compares the outputs and the gradients of every floating input; no op of it
may fall back to the CPU.  float32 is compared tightly (rtol 1e-5, atol 1e-5:
the device computes elementwise ops in double and rounds once, products and
reductions accumulate in another order).  bfloat16 runs on the device from
bf16 values and is compared with the CPU's float32 result from the same
values, within rtol 1.6e-2, atol 2e-2: each bf16 rounding is 2^-8 relative
and a case rounds a few times.
"""
import pytest
import torch
import torch.nn.functional as F

import hpu_torch

HPU = torch.device("hpu:0")
TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.bfloat16: dict(rtol=1.6e-2, atol=2e-2)}


def fallback_diff(before):
    after = hpu_torch.fallback_counts()
    return {op: n - before.get(op, 0) for op, n in after.items() if n != before.get(op, 0)}


def inputs(specs, dtype, seed):
    """Host tensors from specs: a shape is randn values of dtype, a tensor is itself."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g).to(dtype) if isinstance(s, tuple) else s for s in specs]


def flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check(fn, *specs, dtype=torch.float32, grad=True, seed=0, tol=None):
    """fn on hpu (dtype) against fn on the CPU (float32 from the same values), without fallback."""
    tol = tol or TOL[dtype]
    host = inputs(specs, dtype, seed)
    cpu = [t.float() if t.is_floating_point() else t for t in host]
    cpu = [t.clone().requires_grad_(grad and t.is_floating_point()) for t in cpu]
    dev = [t.detach().to(HPU).requires_grad_(c.requires_grad) for t, c in zip(host, cpu)]
    before = hpu_torch.fallback_counts()
    want, got = flat(fn(*cpu)), flat(fn(*dev))
    for w, g in zip(want, got):
        assert g.device == HPU
        if w.is_floating_point():
            torch.testing.assert_close(g.cpu().float(), w.detach(), **tol)
        else:
            assert torch.equal(g.cpu(), w), f"got {g.cpu()}\nwant {w}"
    if grad:
        outs = [(w, g) for w, g in zip(want, got) if w.requires_grad]
        seeds = [torch.randn(w.shape, generator=torch.Generator().manual_seed(seed + 1))
                 for w, _ in outs]
        torch.autograd.backward([w for w, _ in outs], seeds)
        torch.autograd.backward([g for _, g in outs], [s.to(dtype).to(HPU) for s in seeds])
        for c, d in zip(cpu, dev):
            if c.requires_grad:
                assert d.grad is not None and d.grad.device == HPU
                torch.testing.assert_close(d.grad.cpu().float(), c.grad, **tol)
    assert fallback_diff(before) == {}, "ops fell back to the CPU"


FLOATS = [torch.float32, torch.bfloat16]
pos = lambda t: t.abs() + 0.5  # noqa: E731  a positive operand

# name: (fn, input shapes): forward and backward in both floating dtypes.
ELTWISE = {
    "add": (lambda a, b: a + b, [(3, 4), (3, 4)]),
    "add_alpha_broadcast": (lambda a, b: torch.add(a, b, alpha=0.5), [(3, 1), (1, 4)]),
    "sub_transposed": (lambda a, b: a.t() - b, [(4, 3), (3, 4)]),
    "sub_scalar_tensor": (lambda a, b: a - b.sum(), [(3, 4), (2,)]),
    "rsub": (lambda a: 2 - a, [(5,)]),
    "mul_scalar": (lambda a: a * 1.5, [(2, 3)]),
    "mul_strided": (lambda a, b: a[:, ::2] * b, [(3, 8), (4,)]),
    "div": (lambda a, b: a / pos(b), [(3, 4), (3, 4)]),
    "scalar_div": (lambda a: 1 / pos(a), [(6,)]),
    "inplace": (lambda a, b: (a * 1).mul_(b).add_(b, alpha=-2).div_(2).sub_(b), [(3, 4), (4,)]),
    "inplace_number": (lambda a: (a * 1).add_(2).mul_(0.5).sub_(1, alpha=2).div_(4), [(3, 4)]),
    "inplace_unary": (lambda a: [getattr(pos(a) * 1, f + "_")() for f in
                                 ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal",
                                  "tanh", "sigmoid")], [(3, 4)]),
    "inplace_addc": (lambda s, a, b: (s * 1).addcmul_(a, b, value=0.5).addcdiv_(a, pos(b)),
                     [(3, 4), (3, 4), (4,)]),
    "maximum": (lambda a, b: torch.maximum(a, b), [(3, 4), (1, 4)]),
    "minimum": (lambda a, b: torch.minimum(a, b), [(3, 4), (3, 1)]),
    "pow_scalar": (lambda a: pos(a) ** 1.5, [(3, 4)]),
    "square": (lambda a: a ** 2, [(3, 4)]),
    "pow_tensor": (lambda a, b: pos(a) ** b, [(3, 4), (3, 4)]),
    "neg": (lambda a: -a, [(3, 4)]),
    "abs": (lambda a: a.abs(), [(3, 4)]),
    "exp": (lambda a: a.exp(), [(3, 4)]),
    "log": (lambda a: pos(a).log(), [(3, 4)]),
    "sqrt": (lambda a: pos(a).sqrt(), [(3, 4)]),
    "rsqrt": (lambda a: pos(a).rsqrt(), [(3, 4)]),
    "reciprocal": (lambda a: pos(a).reciprocal(), [(3, 4)]),
    "tanh": (lambda a: a.tanh(), [(3, 4)]),
    "sigmoid": (lambda a: torch.sigmoid(a), [(3, 4)]),
    "relu": (lambda a: F.relu(a), [(3, 4)]),
    "relu_": (lambda a: F.relu(a * 1, inplace=True), [(3, 4)]),
    "gelu": (lambda a: F.gelu(a), [(3, 4)]),
    "gelu_tanh": (lambda a: F.gelu(a, approximate="tanh"), [(3, 4)]),
    "sign": (lambda a: a.sign() * a, [(3, 4)]),
    "clamp": (lambda a: a.clamp(-0.5, 0.5), [(3, 4)]),
    "clamp_max_": (lambda a: (a * 1).clamp_(max=0.2), [(3, 4)]),
    "clamp_min": (lambda a: torch.clamp(a[:, ::2], min=0.1), [(3, 8)]),
    "norm": (lambda a: torch.norm(a), [(3, 4)]),
    "norm_dim": (lambda a: torch.norm(a, 1, dim=1, keepdim=True), [(3, 4)]),
    "norm_p3": (lambda a: torch.norm(a.t(), 3, dim=0), [(3, 4)]),
    "norm_inf": (lambda a: (torch.norm(a, float("inf")), torch.norm(a, float("-inf"), dim=0)),
                 [(3, 4)]),
    "cat": (lambda a, b: torch.cat([a, b.t(), torch.empty(0)], 1), [(3, 4), (2, 3)]),
    "stack": (lambda a, b: torch.stack([a, b * 2], 1), [(3, 4), (3, 4)]),
    "addcmul": (lambda s, a, b: torch.addcmul(s, a, b, value=0.5), [(3, 4), (3, 1), (4,)]),
    "addcdiv": (lambda s, a, b: torch.addcdiv(s, a, pos(b), value=-2), [(3, 4), (3, 4), (3, 4)]),
    "where": (lambda a, b: torch.where(a > b, a, b * 2), [(3, 4), (4,)]),
    "masked_fill": (lambda a, m: a.masked_fill(m, 2.0),
                    [(3, 4), torch.tensor([True, False, True, False])]),
    "sum": (lambda a: a.sum(), [(3, 4)]),
    "sum_dim": (lambda a: a.sum(0), [(3, 4)]),
    "sum_keepdim": (lambda a: a.sum((0, 2), keepdim=True), [(2, 3, 4)]),
    "mean": (lambda a: a.mean(-1), [(3, 4)]),
    "amax": (lambda a: a.amax(1), [(3, 4)]),
    "amin": (lambda a: a.amin(0, keepdim=True), [(3, 4)]),
    "softmax": (lambda a: F.softmax(a, dim=1), [(3, 5)]),
    "softmax_dim0": (lambda a: F.softmax(a, dim=0), [(3, 5)]),
    "log_softmax": (lambda a: F.log_softmax(a, dim=1), [(3, 5)]),
    "log_softmax_transposed": (lambda a: F.log_softmax(a.t(), dim=-1), [(5, 3)]),
    "linear": (lambda x, w, b: F.linear(x, w, b), [(4, 6), (3, 6), (3,)]),
    "linear_nobias": (lambda x, w: F.linear(x, w), [(4, 6), (3, 6)]),
    "linear_3d": (lambda x, w, b: F.linear(x, w, b), [(2, 4, 6), (3, 6), (3,)]),
    "mm": (lambda a, b: a @ b, [(4, 6), (6, 3)]),
    "mm_transposed": (lambda a, b: a.t() @ b.t(), [(6, 4), (3, 6)]),
    "addmm_beta_alpha": (lambda s, a, b: torch.addmm(s, a, b, beta=0.5, alpha=2),
                         [(4, 3), (4, 6), (6, 3)]),
    "bmm": (lambda a, b: torch.bmm(a, b), [(2, 4, 6), (2, 6, 3)]),
    "matmul_broadcast": (lambda a, b: a @ b, [(2, 4, 6), (6, 3)]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (6,), w, b), [(4, 6), (6,), (6,)]),
    "layer_norm_2d": (lambda x: F.layer_norm(x, (3, 4)), [(2, 3, 4)]),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "bf16"])
@pytest.mark.parametrize("name", ELTWISE)
def test_kernel(name, dtype):
    fn, shapes = ELTWISE[name]
    check(fn, *shapes, dtype=dtype)


COMPARISONS = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}


@pytest.mark.parametrize("name", COMPARISONS)
def test_comparison(name):
    fn = COMPARISONS[name]
    a = torch.tensor([[1., 2., 3.], [4., 5., 6.]])
    b = torch.tensor([2., 2., 7.])
    check(fn, a, b, grad=False)
    check(lambda x: fn(x, 2), a, grad=False)
    check(lambda x: fn(2.0, x), a, grad=False)
    check(fn, a.int(), b.int(), grad=False)


def test_logical():
    a, b = torch.tensor([0., 1., 2., 0.]), torch.tensor([3, 0, 1, 0])
    check(lambda x, y: (torch.logical_and(x, y), torch.logical_or(x, y)), a, b, grad=False)


def test_integral_arithmetic():
    big = torch.tensor([2**40 + 1, -3, 7])
    check(lambda a, b: a + b * 3 - a, big, torch.tensor([5, 6, -7]), grad=False)
    check(lambda a: -a.abs(), big, grad=False)
    check(lambda a: a.sum(), torch.tensor([True, False, True]), grad=False)


def test_reduce_indices():
    a = torch.tensor([[1., 9., 3.], [7., 2., 7.]])
    check(lambda x: (x.argmax(1), x.argmin(0), x.argmax()), a, grad=False)
    check(lambda x: torch.max(x, 1), a, grad=False)
    check(lambda x: torch.min(x, 0, keepdim=True), a, grad=False)
    check(lambda x: (x.max(), x.min()), a, grad=False)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction):
    target = torch.tensor([1, 0, 4, 2, 4])
    check(lambda x, t: F.nll_loss(F.log_softmax(x, 1), t, reduction=reduction), (5, 6), target)
    check(lambda x, t: F.nll_loss(F.log_softmax(x, 1), t, reduction=reduction, ignore_index=4),
          (5, 6), target)
    check(lambda x, t: F.cross_entropy(x, t, reduction=reduction), (5, 6), target)


@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding(padding_idx):
    idx = torch.tensor([[0, 2, 4], [2, 1, 2]])
    check(lambda w, i: F.embedding(i, w, padding_idx=padding_idx), (5, 3), idx)


INPLACE_MISUSE = {
    "does_not_broadcast_into_self": lambda d: torch.ones(3, device=d).add_(torch.ones(2, 3)
                                                                          .to(d)),
    "float_into_long": lambda d: torch.ones(3, dtype=torch.long, device=d).mul_(1.5),
    "float_tensor_into_long": lambda d: torch.ones(3, dtype=torch.long, device=d).sqrt_(),
    "partial_overlap": lambda d: (lambda x: x[1:].add_(x[:-1]))(torch.ones(4, device=d)),
    "internal_overlap": lambda d: torch.ones(3, device=d).expand(2, 3).addcmul_(
        torch.ones(3, device=d), torch.ones(3, device=d)),
}


MISUSE = dict(INPLACE_MISUSE, **{
    "cat_0dim": lambda d: torch.cat([torch.ones(2, device=d), torch.tensor(1.).to(d)]),
    "cat_sizes": lambda d: torch.cat([torch.ones(2, 3, device=d), torch.ones(2, 4, device=d)]),
    "cat_into_input": lambda d: (lambda x: torch.cat([x, x], out=x))(torch.ones(2, device=d)),
})


@pytest.mark.parametrize("name", MISUSE)
def test_misuse_raises_as_on_cpu(name):
    """In-place kernels and cat check what PyTorch's own kernels do, with the CPU's errors."""
    with pytest.raises(RuntimeError) as cpu:
        MISUSE[name]("cpu")
    with pytest.raises(RuntimeError) as hpu:
        MISUSE[name](HPU)
    assert str(hpu.value).splitlines()[0] == str(cpu.value).splitlines()[0]


def test_nan_propagates_as_on_cpu():
    """maximum/minimum and the max/min reductions return NaN where the CPU does; argmax picks it."""
    n = float("nan")
    a = torch.tensor([[1., n, 3.], [n, 2., -1.], [4., 5., 6.]])
    b = torch.tensor([0., 5., n])
    tol = dict(rtol=1e-5, atol=1e-5, equal_nan=True)
    check(lambda x, y: (torch.maximum(x, y), torch.minimum(x, y)), a, b, grad=False, tol=tol)
    check(lambda x: (x.amax(1), x.amin(0), x.max(), x.min(), x.sign(), F.relu(x), x.isnan(),
                     x.clamp(0, 2)), a,
          grad=False, tol=tol)
    check(lambda x: (x.argmax(1), x.argmin(0), x.argmax()) + tuple(torch.max(x, 1)), a,
          grad=False, tol=tol)


@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
def test_clip_grad_norm(norm_type):
    """nn.utils.clip_grad_norm_ (norm, stack, clamp, mul_) on the device, the CPU's results."""
    def grads(device):
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
        m = m.to(device)
        m(torch.randn(4, 6).to(device)).pow(2).sum().backward()
        total = torch.nn.utils.clip_grad_norm_(m.parameters(), 0.5, norm_type=norm_type)
        return total, [p.grad for p in m.parameters()]

    want = grads("cpu")
    before = hpu_torch.fallback_counts()
    got = grads(HPU)
    torch.testing.assert_close(got[0].cpu(), want[0])
    for g, w in zip(got[1], want[1]):
        torch.testing.assert_close(g.cpu(), w)
    assert fallback_diff(before) == {}


def test_registered_kernel_falls_back_when_device_cannot():
    """A registered kernel whose operands the device does not take goes to the fallback, counted."""
    before = hpu_torch.fallback_counts()
    a = torch.arange(6, dtype=torch.float16).to(HPU)
    assert torch.equal((a * 2).cpu(), torch.arange(6, dtype=torch.float16) * 2)
    assert fallback_diff(before) == {"aten::mul": 1}


@pytest.mark.parametrize("name", ["SGD", "Adadelta", "AdamW"])
def test_optimizer_steps(name):
    """torch.optim's single-tensor steps: elementwise kernels only, the CPU's results."""
    make = {"SGD": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01,
                                             nesterov=True),
            "Adadelta": lambda p: torch.optim.Adadelta(p, lr=0.1),
            "AdamW": lambda p: torch.optim.AdamW(p, lr=0.01)}[name]
    torch.manual_seed(0)
    cpu = torch.nn.Linear(5, 3)
    dev = torch.nn.Linear(5, 3).to(HPU)
    dev.load_state_dict(cpu.state_dict())
    x, y = torch.randn(4, 5), torch.randn(4, 3)
    opts = [make(cpu.parameters()), make(dev.parameters())]
    before = hpu_torch.fallback_counts()
    for _ in range(3):
        for model, opt, dx, dy in [(cpu, opts[0], x, y), (dev, opts[1], x.to(HPU), y.to(HPU))]:
            opt.zero_grad(set_to_none=True)
            ((model(dx) - dy) ** 2).mean().backward()
            opt.step()
    assert fallback_diff(before) == {}
    for p, q in zip(cpu.parameters(), dev.parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-5, atol=1e-6)
