# SPDX-License-Identifier: MIT
"""hpex.hmp, Gaudi's mixed precision, on hpu tensors: each of the seeds' rules (output dtypes,
and results against the CPU under the same casts), list files, disable_casts, O2, verbose
decisions, misuse errors, the casts in lazy mode's recipe keys and in an HPU graph, and a small
conv net trained under O1 against fp32."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import hpu_torch
from hpu_torch import core
from hpu_torch.hpex import hmp

HPU = torch.device("hpu:0")
BF16, FP32 = torch.bfloat16, torch.float32


@pytest.fixture
def convert():
    """hmp.convert for one test; no casts after it."""
    yield hmp.convert
    hmp._reset()


def randn(*shape, seed=0, dtype=FP32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def on_both(fn, *inputs):
    """fn on hpu copies of inputs and on the CPU ones, both under the current hmp settings."""
    return fn(*[t.to(HPU) for t in inputs]), fn(*inputs)


def check(got, want, dtype):
    """Same dtype on both, the dtype the rule says; bf16 to its precision (rounding of one
    result: 2^-7 relative), fp32 from bf16 inputs tightly."""
    assert got.device.type == "hpu" and got.dtype == want.dtype == dtype
    tol = dict(rtol=1e-2, atol=1e-2) if dtype == BF16 else dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got.cpu().float(), want.float(), **tol)


def check_gemm(fn, inputs, dtype):
    """A GEMM or convolution under hmp: the dtype the CPU's gives; the values the device's
    arithmetic gives: the inputs as cast (bf16 exact in fp32), exact products summed in fp32,
    the result rounded once (the CPU's own bf16 kernels round partial sums, 2 ulps off here).
    Within one rounding of the result: 2^-7 relative."""
    got, want = on_both(fn, *inputs)
    assert got.device.type == "hpu" and got.dtype == want.dtype == dtype
    with hmp.disable_casts():
        exact = fn(*[t.to(BF16).float() if dtype == BF16 else t.float() for t in inputs])
    torch.testing.assert_close(got.cpu().float(), exact.to(dtype).float(), rtol=2 ** -7,
                               atol=1e-4)
    return got


BF16_CASES = {
    "addmm": (lambda b, x, w: torch.addmm(b, x, w), ((7,), (5, 9), (9, 7))),
    "bmm": (lambda x, w: torch.bmm(x, w), ((3, 5, 9), (3, 9, 7))),
    "conv1d": (lambda x, w: F.conv1d(x, w, padding=1), ((2, 3, 11), (4, 3, 3))),
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b), ((2, 3, 9, 8), (4, 3, 3, 3), (4,))),
    "dot": (lambda x, y: torch.dot(x, y), ((33,), (33,))),
    "mm": (lambda x, w: x.mm(w), ((5, 9), (9, 7))),
    "mv": (lambda x, v: torch.mv(x, v), ((5, 9), (9,))),
}


@pytest.mark.parametrize("name", sorted(BF16_CASES))
def test_o1_bf16_list_runs_in_bf16(convert, name):
    fn, shapes = BF16_CASES[name]
    inputs = [randn(*s, seed=i) for i, s in enumerate(shapes)]
    want_fp32 = fn(*inputs)
    convert()
    before = hpu_torch.fallback_counts()
    got = check_gemm(fn, inputs, BF16)
    assert hpu_torch.fallback_counts() == before, "the device runs every op of the list"
    # Against fp32 too: bf16 inputs round each product by 2^-8 at most.
    torch.testing.assert_close(got.cpu().float(), want_fp32, rtol=0.05, atol=0.1)


@pytest.mark.parametrize("dtype", [FP32, BF16])
def test_dot_and_mv_run_on_the_device(dtype):
    """torch.dot and torch.mv (addmv: beta and alpha too) on the matrix engine, forward and
    backward, strided operands, against the CPU in fp32 (the device's arithmetic for bf16)."""
    a, v = randn(7, 20, seed=30)[:, ::2], randn(30, seed=31)[::3]
    self_ = randn(7, seed=32)
    # bf16: addmv rounds the product, then the sum: two roundings.
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == FP32 else dict(rtol=2 ** -6, atol=1e-4)
    before = hpu_torch.fallback_counts()
    for fn in (lambda m, u, s: torch.dot(u, m[0]), lambda m, u, s: torch.mv(m, u),
               lambda m, u, s: torch.addmv(s, m, u, beta=0.5, alpha=2.0)):
        cpu = [t.detach().to(dtype).float().requires_grad_() for t in (a, v, self_)]
        dev = [t.detach().to(dtype).to(HPU).requires_grad_() for t in (a, v, self_)]
        want, got = fn(*cpu), fn(*dev)
        assert got.dtype == dtype and got.shape == want.shape
        torch.testing.assert_close(got.cpu().float(), want.to(dtype).float(), **tol)
        # (A 0-dim sum falls back: dot's result is differentiated as it is.)
        for out in (got, want):
            (out.sum() if out.dim() else out).backward()
        for d, c in zip(dev, cpu):
            if c.grad is not None:
                torch.testing.assert_close(d.grad.cpu().float(), c.grad.to(dtype).float(),
                                           **tol)
    assert hpu_torch.fallback_counts() == before


def test_o1_conv3d_is_cast_to_bf16(convert, capsys):
    """conv3d is in the list (the cast is the rule's; the CPU runs it: a bf16 conv3d)."""
    convert(isVerbose=True)
    x, w = randn(1, 2, 4, 4, 4), randn(3, 2, 2, 2, 2, seed=1)
    assert F.conv3d(x, w).dtype == BF16
    assert "hmp: conv3d: (float32,float32) -> bfloat16 (bf16 list)" in capsys.readouterr().out


FP32_CASES = {
    "batch_norm": lambda x: F.batch_norm(x, torch.zeros(x.shape[1], device=x.device),
                                         torch.ones(x.shape[1], device=x.device), training=True),
    "cross_entropy": lambda x: F.cross_entropy(x, torch.arange(x.shape[0], device=x.device) % 3),
    "log_softmax": lambda x: F.log_softmax(x, dim=1),
    "softmax": lambda x: torch.softmax(x, 1),
    "nll_loss": lambda x: F.nll_loss(x, torch.arange(x.shape[0], device=x.device) % 3),
    "topk": lambda x: x.topk(2, dim=1).values,
}


@pytest.mark.parametrize("name", sorted(FP32_CASES))
def test_o1_fp32_list_runs_in_fp32(convert, name):
    x = randn(6, 5, seed=3, dtype=BF16)
    convert()
    got, want = on_both(FP32_CASES[name], x)
    check(got, want, FP32)


def test_batch_norm_updates_its_running_statistics(convert):
    """batch_norm's running statistics are updated in place, not in a cast copy, even when the
    op is cast (bf16 input, fp32 list)."""
    mean, var = torch.zeros(4, device=HPU), torch.ones(4, device=HPU)
    convert()
    x = randn(8, 4, seed=4, dtype=BF16)
    F.batch_norm(x.to(HPU), mean, var, training=True, momentum=1.0)
    torch.testing.assert_close(mean.cpu(), x.float().mean(0), rtol=1e-5, atol=1e-5)


def test_other_ops_keep_their_first_input_precision(convert):
    convert()
    x = randn(4, 6, seed=5, dtype=BF16)
    for fn in (torch.relu, torch.tanh, lambda t: t * 2, lambda t: t.sum(1)):
        got, want = on_both(fn, x)
        check(got, want, BF16)


def test_multi_input_ops_cast_to_the_widest(convert):
    """Without hmp, layer_norm and add refuse mixed dtypes; under O1 they run in fp32."""
    x, w = randn(5, 8, seed=6, dtype=BF16), randn(3, 8, seed=7)
    with pytest.raises(RuntimeError):
        F.layer_norm(x, (8,), randn(8, seed=9))
    convert()
    check(*on_both(lambda t, g: F.layer_norm(t, (8,), g), x, randn(8, seed=9)), FP32)
    check(*on_both(lambda t, u: torch.cat([t, u]), x, randn(2, 8, seed=10)), FP32)
    check(*on_both(torch.add, x, w[:1]), FP32)


def test_in_place_ops_cast_to_the_first_input(convert):
    convert()
    for first, other in ((FP32, BF16), (BF16, FP32)):
        a, b = randn(4, 5, seed=11, dtype=first), randn(4, 5, seed=12, dtype=other)

        def fn(u, v):
            u = u.clone()
            u.mul_(v)
            u += v
            u[1:3] = v[1:3] * 2
            return u
        check(*on_both(fn, a, b), first)


def test_list_files_replace_the_lists(convert, tmp_path):
    bf16, fp32 = tmp_path / "ops_bf16.txt", tmp_path / "ops_fp32.txt"
    bf16.write_text("# GEMMs of nn.Linear\nlinear\n\nrelu  # and its activation\n")
    fp32.write_text("mm\n")
    convert(bf16_file_path=str(bf16), fp32_file_path=str(fp32))
    x, w = randn(5, 9, seed=13), randn(9, 7, seed=14)
    check_gemm(lambda a, b: F.linear(a, b.t()), (x, w), BF16)
    check(*on_both(torch.relu, x), BF16)
    check_gemm(torch.mm, (x.to(BF16), w.to(BF16)), FP32)
    # Out of both lists now: addmm keeps its inputs' fp32, softmax its input's bf16.
    check_gemm(torch.addmm, (randn(7), x, w), FP32)
    check(*on_both(lambda t: torch.softmax(t, 1), x.to(BF16)), BF16)


def test_linear_and_matmul_follow_their_gemms(convert, tmp_path):
    """F.linear (addmm) and matmul (mm, bmm) run in bf16 under O1's list; with a bf16 list
    without their GEMMs they run in their widest input's precision."""
    x, w, b = randn(5, 8, seed=6), randn(3, 8, seed=7), randn(3, seed=8, dtype=BF16)
    convert()
    check_gemm(F.linear, (x, w, b), BF16)
    check_gemm(lambda a, c: torch.matmul(a, c.t()), (x, w), BF16)
    bf16 = tmp_path / "bf16.txt"
    bf16.write_text("conv2d\n")
    convert(bf16_file_path=str(bf16))
    check_gemm(F.linear, (x, w, b), FP32)


def test_disable_casts(convert):
    convert()
    x, w = randn(5, 9, seed=15).to(HPU), randn(9, 7, seed=16).to(HPU)
    with hmp.disable_casts():
        assert torch.mm(x, w).dtype == FP32
        with hmp.disable_casts():
            assert torch.mm(x, w).dtype == FP32
        assert torch.mm(x, w).dtype == FP32
    assert torch.mm(x, w).dtype == BF16


def test_o2_runs_only_gemm_and_convolution_in_bf16(convert):
    convert(opt_level="O2")
    x, w = randn(5, 9, seed=17), randn(7, 9, seed=18)
    check_gemm(lambda a, b: F.linear(a, b), (x, w), BF16)
    check_gemm(lambda a, b: torch.matmul(a, b.t()), (x, w), BF16)
    check_gemm(lambda a, b: torch.mm(a, b.t()), (x, w), BF16)
    check(*on_both(torch.relu, x.to(BF16)), FP32)
    check(*on_both(lambda t: t * 3, x.to(BF16)), FP32)
    check(*on_both(lambda t: torch.softmax(t, 1), x.to(BF16)), FP32)
    check_gemm(F.conv2d, (randn(2, 1, 6, 6, seed=20), randn(2, 1, 3, 3, seed=19)), BF16)


def test_verbose_prints_each_cast(convert, capsys):
    convert(isVerbose=True)
    x = randn(4, 4, seed=21).to(HPU)
    y = torch.mm(x, x)
    torch.softmax(y, 1)
    torch.relu(y)
    out = capsys.readouterr().out.splitlines()
    assert out == ["hmp: mm: (float32,float32) -> bfloat16 (bf16 list)",
                   "hmp: softmax: (bfloat16) -> float32 (fp32 list)"]


def test_misuse(convert, tmp_path):
    convert()
    for level in ("O3", "o1", 1, None):
        with pytest.raises(ValueError, match="opt_level must be 'O1' or 'O2'"):
            hmp.convert(opt_level=level)
    with pytest.raises(FileNotFoundError):
        hmp.convert(bf16_file_path=str(tmp_path / "missing.txt"))
    typo = tmp_path / "typo.txt"
    typo.write_text("mm\nconv2\n")
    with pytest.raises(ValueError, match=r"typo.txt:2: 'conv2' is not an op"):
        hmp.convert(fp32_file_path=str(typo))
    both = tmp_path / "both.txt"
    both.write_text("softmax\n")
    with pytest.raises(ValueError, match="softmax in both the bf16 and the fp32 list"):
        hmp.convert(bf16_file_path=str(both))
    # The failed calls changed nothing: O1's default lists.
    x = randn(3, 3, seed=22).to(HPU)
    assert torch.mm(x, x).dtype == BF16 and torch.softmax(x.to(BF16), 1).dtype == FP32


def metric(name, stat):
    return hpu_torch._C._metric_value(name, stat)


def test_casts_are_in_the_recipe_key(convert):
    """Lazy mode: the same step with and without O1's casts compiles two recipes; each repeats
    without compiling."""
    was = core.is_lazy()
    core._set_lazy(True)
    try:
        x, w = randn(16, 32, seed=23).to(HPU), randn(32, 8, seed=24).to(HPU)
        core.mark_step()

        def step():
            y = torch.softmax(torch.relu(torch.mm(x, w)), 1).sum(0)
            core.mark_step()
            return y
        convert()
        compiled = metric("graph_compilation", "TotalNumber")
        with hmp.disable_casts():
            plain = step()
        assert metric("graph_compilation", "TotalNumber") == compiled + 1
        mixed = step()
        assert metric("graph_compilation", "TotalNumber") == compiled + 2
        for _ in range(3):
            again = step()
            with hmp.disable_casts():
                step()
        assert metric("graph_compilation", "TotalNumber") == compiled + 2
        assert torch.equal(again.cpu(), mixed.cpu()) and not torch.equal(mixed.cpu(), plain.cpu())
        ref = torch.softmax(torch.relu(torch.mm(x.cpu(), w.cpu())), 1).sum(0)
        torch.testing.assert_close(mixed.cpu(), ref, rtol=0.02, atol=0.02)
    finally:
        core._set_lazy(was)


def test_casts_are_captured_by_an_hpu_graph(convert):
    convert()
    x, w = randn(8, 16, seed=25).to(HPU), randn(16, 4, seed=26).to(HPU)
    g = torch.hpu.HPUGraph()
    with torch.hpu.graph(g):
        y = torch.log_softmax(torch.mm(x, w), 1)
    for seed in (27, 28):
        new = randn(8, 16, seed=seed)
        x.copy_(new.to(HPU))
        g.replay()
        eager = torch.log_softmax(torch.mm(x, w), 1)
        assert y.dtype == eager.dtype == FP32 and torch.equal(y.cpu(), eager.cpu())
        # The bf16 mm's result rounded once (an ulp flip moves an element by up to 2^-4).
        with hmp.disable_casts():
            mm = torch.mm(new.to(BF16).float(), w.cpu().to(BF16).float()).to(BF16)
        want = torch.log_softmax(mm.float(), 1)
        torch.testing.assert_close(y.cpu(), want, rtol=0, atol=0.15)
        assert not torch.equal(y.cpu(), torch.log_softmax(torch.mm(new, w.cpu()).float(), 1))


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2)
        self.fc1 = nn.Linear(8 * 6 * 6, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.bn(self.conv1(x)))
        x = F.max_pool2d(F.relu(self.conv2(x)), 1)
        x = F.relu(torch.addmm(self.fc1.bias, x.flatten(1), self.fc1.weight.t()))
        return self.fc2(x)


def train(mixed, steps=20):
    """ConvNet on fixed random 14x14 images of 10 classes, SGD under disable_casts (the seeds'
    optimizer advice), lazy mode; the losses."""
    torch.manual_seed(0)
    model = ConvNet().to(HPU)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 1, 14, 14, generator=g).to(HPU)
    y = torch.randint(0, 10, (64,), generator=g).to(HPU)
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        if mixed:
            loss = F.cross_entropy(model(x), y)
        else:
            with hmp.disable_casts():
                loss = F.cross_entropy(model(x), y)
        loss.backward()
        core.mark_step()
        with hmp.disable_casts():
            opt.step()
        core.mark_step()
        losses.append(loss.item())
    return losses, model


def test_o1_training_converges_as_fp32(convert):
    """20 steps (memorizing 64 samples): under O1 the convolutions and the addmm run in bf16,
    the batch norm and the loss in fp32, parameters stay fp32; the loss falls below half its
    start and ends within 0.1 + 10% of fp32's."""
    convert()
    fp32, _ = train(mixed=False)
    bf16, model = train(mixed=True)
    assert all(p.dtype == FP32 and p.grad.dtype == FP32 for p in model.parameters())
    assert fp32[-1] < fp32[0] / 2 and bf16[-1] < bf16[0] / 2
    assert abs(bf16[-1] - fp32[-1]) <= 0.1 + 0.1 * fp32[-1], (fp32, bf16)
    assert bf16 != fp32


def test_float16_is_stored_and_computed_by_the_cpu():
    """float16 is no device dtype (the device does not advertise fp16): its tensors keep
    their bits on hpu and their ops fall back."""
    x = randn(5, seed=29).half()
    before = hpu_torch.fallback_counts().get("aten::mul", 0)
    y = x.to(HPU) * 3
    assert y.device.type == "hpu" and y.dtype == torch.float16
    assert torch.equal(y.cpu(), x * 3)
    assert hpu_torch.fallback_counts().get("aten::mul", 0) == before + 1
