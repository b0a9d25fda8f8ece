# SPDX-License-Identifier: MIT
"""Fused optimizers (hpu_torch.hpex.optimizers) and FusedClipNorm, on the live device.

Each optimizer against torch.optim's on the CPU over several steps (fp32: rtol 1e-5, atol 1e-6
on the params and the state: the device computes each step in double from fp32 operands and
rounds once, the CPU in fp32), with 50 params of odd shapes, some non-contiguous, and the lr
changed between steps; LAMB against its formula in float64 on the CPU; bf16 AdamW against
its one rounding per step.  A cosine schedule in
lazy mode compiles the steady step once; a captured step replayed under a schedule gives the
weights of the uncaptured run.  FusedClipNorm against clip_grad_norm_.  Misuse errors.
"""
import math

import pytest
import torch

import hpu_torch
from hpu_torch.hpex.normalization import FusedClipNorm
from hpu_torch.hpex.optimizers import FusedAdadelta, FusedAdamW, FusedLamb, FusedSGD
from hpu_torch.hpu import metrics

HPU = torch.device("hpu:0")
RTOL, ATOL = 1e-5, 1e-6


def gen(seed):
    return torch.Generator().manual_seed(seed)


def odd_params(n=50, seed=0):
    """n CPU tensors of odd shapes; every fifth is a transposed (non-contiguous) view."""
    g = gen(seed)
    out = []
    for i in range(n):
        shape = [(1,), (7,), (3, 5), (2, 3, 4), (13, 1), ()][i % 6]
        t = torch.randn(shape, generator=g)
        if i % 5 == 4 and t.dim() == 2:
            t = torch.randn((shape[1], shape[0]), generator=g).t()
        out.append(t)
    return out


def twins(cpu_values):
    """The same values as CPU parameters and as hpu parameters (strides kept)."""
    cpu = [torch.nn.Parameter(v.clone()) for v in cpu_values]
    dev = []
    for v in cpu_values:
        d = torch.empty_strided(v.size(), v.stride(), device=HPU)
        d.copy_(v)
        dev.append(torch.nn.Parameter(d))
    return cpu, dev


def set_grads(cpu, dev, seed):
    """The same random gradients; on the device with their params' strides."""
    g = gen(seed)
    for c, d in zip(cpu, dev):
        grad = torch.randn(c.shape, generator=g)
        c.grad = grad.clone()
        d.grad = torch.empty_strided(d.size(), d.stride(), device=HPU).copy_(grad)


def assert_close(dev, cpu, what):
    for i, (d, c) in enumerate(zip(dev, cpu)):
        torch.testing.assert_close(d.detach().cpu(), c.detach(), rtol=RTOL, atol=ATOL,
                                   msg=lambda m: f"{what}[{i}]: {m}")


CASES = [
    (FusedSGD, torch.optim.SGD, dict(lr=0.1)),
    (FusedSGD, torch.optim.SGD, dict(lr=0.1, weight_decay=0.01)),
    (FusedSGD, torch.optim.SGD, dict(lr=0.05, momentum=0.9, dampening=0.25, weight_decay=0.1)),
    (FusedSGD, torch.optim.SGD, dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.02)),
    (FusedAdamW, torch.optim.AdamW, dict(lr=1e-2)),
    (FusedAdamW, torch.optim.AdamW, dict(lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0)),
    (FusedAdamW, torch.optim.AdamW, dict(lr=3e-3, weight_decay=0.3)),
    (FusedAdadelta, torch.optim.Adadelta, dict(lr=1.0)),
    (FusedAdadelta, torch.optim.Adadelta, dict(lr=0.5, rho=0.95, eps=1e-5, weight_decay=0.1)),
]

STATE = {torch.optim.SGD: ["momentum_buffer"], torch.optim.AdamW: ["exp_avg", "exp_avg_sq"],
         torch.optim.Adadelta: ["square_avg", "acc_delta"]}


@pytest.mark.parametrize("fused,reference,kwargs", CASES,
                         ids=[f"{c[1].__name__}-{i}" for i, c in enumerate(CASES)])
def test_matches_torch_optim(fused, reference, kwargs):
    cpu, dev = twins(odd_params())
    ref, opt = reference(cpu, **kwargs), fused(dev, **kwargs)
    for step in range(4):
        if step == 2:  # a new lr, as a scheduler writes it
            for o in (ref, opt):
                o.param_groups[0]["lr"] = kwargs["lr"] / 3
        set_grads(cpu, dev, seed=100 + step)
        ref.step()
        opt.step()
        hpu_torch.core.mark_step()
        assert_close(dev, cpu, f"step {step} param")
        for name in STATE[reference]:
            if ref.state[cpu[0]].get(name) is None:  # SGD without momentum
                continue
            assert_close([opt.state[p][name] for p in dev], [ref.state[p][name] for p in cpu],
                         f"step {step} {name}")
    assert opt.state[dev[0]]["step"].item() == 4


def test_bf16_adamw_rounds_once():
    """bf16 params and moments: each step computed in double from the stored values and
    rounded once (through fp32, as the device stores), against that in float64 on the CPU
    (within one bf16 ulp: rtol 2^-8)."""
    values = [v.bfloat16() for v in odd_params(12, seed=4)]
    dev = [torch.nn.Parameter(v.to(HPU)) for v in values]
    lr, (b1, b2), eps, wd = 0.01, (0.9, 0.99), 1e-6, 0.1
    opt = FusedAdamW(dev, lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
    lr32 = float(torch.tensor(lr, dtype=torch.float32))
    rnd = lambda x: x.float().bfloat16().double()  # noqa: E731
    p = [v.double() for v in values]
    m = [torch.zeros_like(x) for x in p]
    v = [torch.zeros_like(x) for x in p]
    for t in range(1, 4):
        grads = [torch.randn(x.shape, generator=gen(300 + 10 * t + i)).bfloat16()
                 for i, x in enumerate(values)]
        for d, g in zip(dev, grads):
            d.grad = g.to(HPU)
        opt.step()
        for i, g in enumerate(grads):
            g = g.double()
            mi, vi = b1 * m[i] + (1 - b1) * g, b2 * v[i] + (1 - b2) * g * g
            q = p[i] * (1 - lr32 * wd)
            p[i] = rnd(q - lr32 / (1 - b1 ** t) * mi / (vi.sqrt() / math.sqrt(1 - b2 ** t) + eps))
            m[i], v[i] = rnd(mi), rnd(vi)
    for i, d in enumerate(dev):
        assert d.dtype == torch.bfloat16 and opt.state[d]["exp_avg"].dtype == torch.bfloat16
        torch.testing.assert_close(d.detach().cpu().double(), p[i], rtol=2 ** -8, atol=1e-6)
        torch.testing.assert_close(opt.state[d]["exp_avg_sq"].cpu().double(), v[i],
                                   rtol=2 ** -8, atol=1e-6)


def test_params_without_grad_and_groups():
    cpu, dev = twins(odd_params(8, seed=3))
    groups = lambda ps: [{"params": ps[:4]}, {"params": ps[4:], "lr": 0.5, "weight_decay": 0.2}]
    ref = torch.optim.AdamW(groups(cpu), lr=0.1)
    opt = FusedAdamW(groups(dev), lr=0.1)
    for step in range(3):
        set_grads(cpu, dev, seed=step)
        cpu[1].grad = dev[1].grad = None  # skipped, as torch skips it
        ref.step()
        opt.step()
    assert_close(dev, cpu, "param")
    assert opt.state[dev[4]]["step"].item() == 3 and dev[1] not in opt.state


def lamb_reference(params, grads_per_step, lr, betas, eps, wd, lrs=None):
    """LAMB in float64 on the CPU: AdamW's moments (stored fp32), the trust ratio per param."""
    b1, b2 = betas
    p64 = [p.double() for p in params]
    m = [torch.zeros_like(p) for p in p64]
    v = [torch.zeros_like(p) for p in p64]
    for t, grads in enumerate(grads_per_step, start=1):
        step_lr = lrs[t - 1] if lrs else lr
        for i, g in enumerate(grads):
            g = g.double()
            m[i] = (b1 * m[i] + (1 - b1) * g).float().double()
            v[i] = (b2 * v[i] + (1 - b2) * g * g).float().double()
            u = m[i] / (1 - b1 ** t) / ((v[i] / (1 - b2 ** t)).sqrt() + eps) + wd * p64[i]
            wn, un = p64[i].norm(), u.norm()
            ratio = wn / un if wn > 0 and un > 0 else 1.0
            p64[i] = (p64[i] - torch.tensor(step_lr).float().double() * ratio * u).float().double()
    return [p.float() for p in p64]


def test_lamb_matches_its_formula():
    values = odd_params(20, seed=5)
    _, dev = twins(values)
    opt = FusedLamb(dev, lr=0.02, betas=(0.9, 0.99), eps=1e-6, weight_decay=0.05)
    grads_per_step = []
    for step in range(3):
        grads = [torch.randn(v.shape, generator=gen(200 + 10 * step + i))
                 for i, v in enumerate(values)]
        grads_per_step.append(grads)
        for d, g in zip(dev, grads):
            d.grad = g.to(HPU)
        opt.step()
    want = lamb_reference(values, grads_per_step, 0.02, (0.9, 0.99), 1e-6, 0.05)
    assert_close(dev, want, "param")


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.l1 = torch.nn.Linear(12, 16)
        self.l2 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


def batches(n, seed=7):
    g = gen(seed)
    return [(torch.randn(8, 12, generator=g), torch.randint(0, 3, (8,), generator=g))
            for _ in range(n)]


def compilations():
    return dict(metrics.metric_global("graph_compilation").stats())["TotalNumber"]


def test_cosine_schedule_compiles_once_in_lazy_mode():
    assert hpu_torch.core.is_lazy()
    model = Small().to(HPU)
    opt = FusedAdamW(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)  # down to 0 at step 10
    data = [(x.to(HPU), y.to(HPU)) for x, y in batches(12)]  # no copy inside the steps
    start, counts, lrs = compilations(), [], []
    for x, y in data:
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        hpu_torch.core.mark_step()
        sched.step()  # the lr's device fill: the next step's recipe's first op
        lrs.append(opt.param_groups[0]["lr"])
        counts.append(compilations() - start)
    # Step 1 also makes the optimizer's state; every later step is one recipe, compiled at
    # step 2 (unless a cache has it), whatever its lr (down to 0 and up again).
    assert lrs[9] == 0 and len(set(lrs)) >= 10
    assert counts[1] <= 2 and counts[-1] == counts[1], counts


def train_cpu_reference(data, lrs):
    model = Small()
    opt = torch.optim.AdamW(model.parameters(), lr=lrs[0])
    for (x, y), lr in zip(data, lrs):
        opt.param_groups[0]["lr"] = lr
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return [p.detach() for p in model.parameters()]


def test_captured_step_follows_the_schedule():
    data = batches(6, seed=11)
    # Uncaptured, on the device.
    model = Small().to(HPU)
    opt = FusedAdamW(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=6)
    lrs = []
    for x, y in data:
        lrs.append(opt.param_groups[0]["lr"])
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x.to(HPU)), y.to(HPU)).backward()
        opt.step()
        hpu_torch.core.mark_step()
        sched.step()
    eager = [p.detach().cpu() for p in model.parameters()]
    assert len(set(lrs)) == len(lrs)
    # Captured once (after a warm-up step on a side stream, rewound), replayed per batch.
    model = Small().to(HPU)
    opt = FusedAdamW(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=6)
    static_x = torch.zeros(8, 12, device=HPU)
    static_y = torch.zeros(8, dtype=torch.long, device=HPU)
    saved = [p.detach().clone() for p in model.parameters()]
    s = torch.hpu.Stream()
    s.wait_stream(torch.hpu.current_stream())
    with torch.hpu.stream(s):
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(static_x), static_y).backward()
        opt.step()
    torch.hpu.current_stream().wait_stream(s)
    with torch.no_grad():
        for p, v in zip(model.parameters(), saved):
            p.copy_(v)
        for state in opt.state.values():
            for v in state.values():
                v.zero_()
    g = torch.hpu.HPUGraph()
    opt.zero_grad(set_to_none=True)
    with torch.hpu.graph(g):
        torch.nn.functional.cross_entropy(model(static_x), static_y).backward()
        opt.step()
    for x, y in data:
        static_x.copy_(x.to(HPU))
        static_y.copy_(y.to(HPU))
        g.replay()
        sched.step()
    torch.hpu.synchronize()
    replayed = [p.detach().cpu() for p in model.parameters()]
    for r, e in zip(replayed, eager):
        torch.testing.assert_close(r, e, rtol=0, atol=0)
    # Adam's updates are about lr whatever the gradient: a gradient near 0 that rounds
    # differently on the CPU moves its weight by up to lr, hence the loose bound.
    for r, c in zip(replayed, train_cpu_reference(data, lrs)):
        torch.testing.assert_close(r, c, rtol=1e-3, atol=1e-3)
    assert opt.state[next(model.parameters())]["step"].item() == len(data)


@pytest.mark.parametrize("max_norm,norm_type", [(1.0, 2.0), (1e6, 2.0), (0.5, math.inf),
                                                (1e6, math.inf)])
def test_clip_norm_matches_clip_grad_norm(max_norm, norm_type):
    cpu, dev = twins(odd_params(50, seed=9))
    set_grads(cpu, dev, seed=9)
    assert not all(d.grad.is_contiguous() for d in dev)
    want = torch.nn.utils.clip_grad_norm_(cpu, max_norm, norm_type)
    got = FusedClipNorm(dev, max_norm, norm_type).clip_norm(dev)
    assert got.device.type == "hpu" and got.dim() == 0
    torch.testing.assert_close(got.cpu(), want, rtol=RTOL, atol=0)
    assert_close([d.grad for d in dev], [c.grad for c in cpu], "grad")


def test_clip_norm_without_grads():
    p = torch.nn.Parameter(torch.ones(3, device=HPU))
    assert FusedClipNorm([p], 1.0).clip_norm([p]).item() == 0.0


def test_misuse():
    cpu_params = [torch.nn.Parameter(torch.ones(3))]
    with pytest.raises(ValueError, match="one hpu device"):
        FusedAdamW(cpu_params)
    dev = [torch.nn.Parameter(torch.ones(3, device=HPU))]
    with pytest.raises(ValueError, match="amsgrad"):
        FusedAdamW(dev, amsgrad=True)
    with pytest.raises(ValueError, match="learning rate"):
        FusedSGD(dev, lr=-1)
    with pytest.raises(ValueError, match="lr"):
        FusedSGD(dev)
    with pytest.raises(ValueError, match="beta parameter at index 0"):
        FusedLamb(dev, betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="Nesterov"):
        FusedSGD(dev, lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)
    with pytest.raises(ValueError, match="rho"):
        FusedAdadelta(dev, rho=1.5)
    with pytest.raises(ValueError, match="norm_type"):
        FusedClipNorm(dev, 1.0, norm_type=1)
    lr = torch.tensor(0.1, device=HPU)
    step = torch.zeros((), device=HPU)
    p = torch.ones(3, device=HPU)
    with pytest.raises(RuntimeError, match="must match"):
        torch.ops.hpu.fused_adamw([p], [torch.ones(4, device=HPU)], [torch.zeros(3, device=HPU)],
                                  [torch.zeros(3, device=HPU)], lr, step, 0.9, 0.999, 1e-8, 0.0)
    with pytest.raises(RuntimeError, match="grads for"):
        torch.ops.hpu.fused_sgd([p], [], [], lr, step, 0.0, 0.0, 0.0, False)
    with pytest.raises(RuntimeError, match="lr must be a 0-dim"):
        torch.ops.hpu.fused_sgd([p], [p], [], torch.ones(2, device=HPU), step, 0.0, 0.0, 0.0,
                                False)
    with pytest.raises(RuntimeError, match="beta1"):
        torch.ops.hpu.fused_adamw([p], [p], [p.clone()], [p.clone()], lr, step, 1.5, 0.9, 0.0,
                                  0.0)
    with pytest.raises(RuntimeError, match="floating tensors on hpu"):
        torch.ops.hpu.clip_norm([p, torch.ones(2, dtype=torch.long, device=HPU)], 1.0, 2.0)
