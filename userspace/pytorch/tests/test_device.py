# SPDX-License-Identifier: MIT
"""hpu_torch's device, memory, copies, first kernels and CPU fallback, on the live device.

Run in the test guest in one Python process (import torch alone costs 20-30 s
there) by tests/guest/run-suites.sh.  Every result is checked against PyTorch
on the CPU, bit for bit unless a tolerance is stated.
"""
import pytest
import torch

import hpu_torch
from samples import sample

HPU = torch.device("hpu:0")

# Every dtype the device holds as its own (bool is its U8), then dtypes it only stores.
DEVICE_DTYPES = [torch.float32, torch.bfloat16, torch.int32, torch.int64, torch.bool]
STORED_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.float16, torch.float64,
                 torch.complex64, torch.complex128]


def fallbacks(op):
    return hpu_torch.fallback_counts().get(op, 0)


def assert_same(got, want):
    assert got.device.type == "cpu"
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got, want), f"got {got}\nwant {want}"


def test_device_present():
    assert torch.hpu is hpu_torch.hpu
    assert torch.hpu.is_available()
    assert torch.hpu.device_count() >= 1
    assert torch.hpu.current_device() == 0
    torch.hpu.set_device("hpu:0")
    with pytest.raises(RuntimeError, match="no device"):
        torch.hpu.set_device(torch.hpu.device_count())
    assert torch.hpu.current_device() == 0


def test_tensors_carry_device_index():
    for device in ["hpu", "hpu:0", HPU]:
        t = torch.empty(3, device=device)
        assert t.device == HPU and t.is_contiguous()
    assert torch.ones(2, 3).to("hpu").device == HPU


def test_memory_counts_storages():
    torch.hpu.synchronize()
    base = torch.hpu.memory_allocated()
    stats = torch.hpu.memory_stats()
    for key in ["Limit", "InUse", "MaxInUse", "NumAllocs", "NumFrees", "ActiveAllocs",
                "MaxAllocSize", "TotalSystemAllocs", "TotalSystemFrees", "TotalActiveAllocs",
                "Reserved"]:
        assert key in stats
    assert stats["Limit"] > 0 and stats["TotalActiveAllocs"] >= 1
    t = torch.empty(1000, device="hpu")
    assert torch.hpu.memory_allocated() == base + 4000
    assert torch.hpu.max_memory_allocated() >= base + 4000
    after = torch.hpu.memory_stats()
    assert after["NumAllocs"] == stats["NumAllocs"] + 1
    assert after["ActiveAllocs"] == stats["ActiveAllocs"] + 1
    assert after["Reserved"] >= 4000
    del t
    assert torch.hpu.memory_allocated() == base
    assert torch.hpu.memory_stats()["NumFrees"] == stats["NumFrees"] + 1
    torch.hpu.reset_peak_memory_stats()
    assert torch.hpu.max_memory_allocated() == base
    torch.hpu.empty_cache()


@pytest.mark.parametrize("dtype", DEVICE_DTYPES + STORED_DTYPES, ids=str)
def test_round_trip(dtype):
    host = sample((3, 5, 7), dtype)
    dev = host.to("hpu")
    assert dev.dtype == dtype and dev.device == HPU
    assert_same(dev.cpu(), host)


@pytest.mark.parametrize("dtype", DEVICE_DTYPES + STORED_DTYPES, ids=str)
def test_strided_views(dtype):
    """Views with strides and offsets, read from and written to the device."""
    host = sample((4, 6, 5), dtype)
    dev = host.to("hpu")
    views = [lambda t: t.transpose(0, 2), lambda t: t[1:, ::2, 1:4],
             lambda t: t.permute(2, 0, 1)[..., 3], lambda t: t[2], lambda t: t[:, 3, 1:],
             lambda t: t.expand(2, 4, 6, 5)]
    for view in views:
        assert_same(view(dev).cpu(), view(host))
    # Into a strided view at an offset, from a contiguous and from a strided host tensor.
    src = sample((4, 3, 5), dtype, seed=1)
    dev[:, 1::2].copy_(src)
    host[:, 1::2].copy_(src)
    dev[1, :, 2] = src[0, 0, :].repeat(2)[:6]
    host[1, :, 2] = src[0, 0, :].repeat(2)[:6]
    strided = sample((5, 6), dtype, seed=2).t()
    dev[3].copy_(strided)
    host[3].copy_(strided)
    assert_same(dev.cpu(), host)


def test_more_dims_than_the_device():
    host = sample((2,) * 8, torch.float32)
    assert_same(host.to("hpu").cpu(), host)
    with pytest.raises(RuntimeError, match="dims"):
        host.to("hpu").transpose(0, 7).cpu()


@pytest.mark.parametrize("dtype", DEVICE_DTYPES + [torch.float64, torch.uint8], ids=str)
def test_device_to_device(dtype):
    host = sample((8, 9), dtype)
    dev = host.to("hpu")
    assert_same(dev.clone().cpu(), host)
    out = torch.empty(9, 8, dtype=dtype, device="hpu")
    out.copy_(dev.t())
    assert_same(out.cpu(), host.t())
    # Broadcast into a strided destination on the device.
    big = torch.zeros(4, 8, 9, dtype=dtype, device="hpu")
    big[1:3].copy_(dev[:, :])
    want = torch.zeros(4, 8, 9, dtype=dtype)
    want[1:3] = host
    assert_same(big.cpu(), want)
    with pytest.raises(RuntimeError, match="overlap|single memory location"):
        dev[1:].copy_(dev[:-1])


@pytest.mark.parametrize("src", DEVICE_DTYPES + [torch.uint8, torch.float64], ids=str)
@pytest.mark.parametrize("dst", DEVICE_DTYPES + [torch.uint8, torch.float64], ids=str)
def test_casts(src, dst):
    """Casts on the device and across the copy, as PyTorch casts on the CPU."""
    host = sample((5, 6), src)
    want = host.to(dst)
    dev = host.to("hpu")
    assert_same(dev.to(dst).cpu(), want)             # on the device
    assert_same(host.to("hpu", dst).cpu(), want)     # host to device
    assert_same(dev.to("cpu", dst), want)            # device to host
    assert_same(dev.t().to(dst).cpu(), want.t())     # from a strided view


def test_bf16_rounding_matches_cpu():
    """fp32 to bf16 rounds to nearest even on the device as on the CPU, NaN and inf kept."""
    host = torch.randn(4096, generator=torch.Generator().manual_seed(3)) * 1e3
    host[:4] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0])
    got = host.to("hpu").to(torch.bfloat16).cpu()
    want = host.to(torch.bfloat16)
    assert torch.equal(got.view(torch.int16)[1:], want.view(torch.int16)[1:])
    assert got[0].isnan()


@pytest.mark.parametrize("dtype", DEVICE_DTYPES + STORED_DTYPES, ids=str)
def test_item(dtype):
    host = sample((7,), dtype)
    dev = host.to("hpu")
    for i in [0, 3, 6]:
        assert dev[i].item() == host[i].item()
    assert type(dev[0].item()) is type(host[0].item())


def test_print():
    before = hpu_torch.fallback_counts()
    t = torch.tensor([[1.5, -2.0], [3.25, 0.0]], device="hpu")
    assert str(t) == ("tensor([[ 1.5000, -2.0000],\n        [ 3.2500,  0.0000]], "
                      "device='hpu:0')")
    assert repr(torch.arange(3).to("hpu")) == "tensor([0, 1, 2], device='hpu:0')"
    b = torch.tensor([1.0, 2.0], dtype=torch.bfloat16).to("hpu")
    assert str(b) == "tensor([1., 2.], device='hpu:0', dtype=torch.bfloat16)"
    assert str(torch.empty(0, device="hpu")) == "tensor([], device='hpu:0')"
    # Printing formats a host copy: no op runs on the CPU for it.
    assert hpu_torch.fallback_counts() == before


@pytest.mark.parametrize("dtype", DEVICE_DTYPES + [torch.float64, torch.uint8], ids=str)
def test_factories_and_fills(dtype):
    assert_same(torch.zeros(3, 4, dtype=dtype, device="hpu").cpu(), torch.zeros(3, 4, dtype=dtype))
    assert_same(torch.ones(3, 4, dtype=dtype, device="hpu").cpu(), torch.ones(3, 4, dtype=dtype))
    assert_same(torch.full((5,), 7, dtype=dtype, device="hpu").cpu(),
                torch.full((5,), 7, dtype=dtype))
    host = sample((6, 8), dtype)
    dev = host.to("hpu")
    dev[1:5, ::3].fill_(1)
    host[1:5, ::3].fill_(1)
    dev[:, 2].zero_()
    host[:, 2].zero_()
    assert_same(dev.cpu(), host)


def test_fill_values_the_device_cannot_hold_exactly():
    big = 2 ** 60 + 1
    n = fallbacks("aten::fill_")
    assert torch.full((3,), big, dtype=torch.int64, device="hpu")[1].item() == big
    assert fallbacks("aten::fill_") == n + 1
    assert_same(torch.full((2,), 2.5, device="hpu").cpu(), torch.full((2,), 2.5))
    assert fallbacks("aten::fill_") == n + 1
    # Values PyTorch converts otherwise, or refuses, are PyTorch's to convert.
    assert_same(torch.zeros(2, dtype=torch.int32, device="hpu").fill_(2.7).cpu(),
                torch.zeros(2, dtype=torch.int32).fill_(2.7))
    with pytest.raises(RuntimeError, match="overflow"):
        torch.zeros(2, dtype=torch.int32, device="hpu").fill_(2 ** 40)
    with pytest.raises(RuntimeError, match="overflow"):
        torch.zeros(2, device="hpu").fill_(1e300)
    assert fallbacks("aten::fill_") == n + 4


def test_conjugate_views_copy_as_meant():
    """PyTorch resolves a conjugate view before the copy reaches the device."""
    c = torch.tensor([1 + 2j, 3 - 1j])
    assert_same(c.conj().to("hpu").cpu(), c.conj().resolve_conj())


def test_random_fills_draw_their_generators():
    """rand and randn draw the device's generator (test_random.py), randint the CPU's."""
    torch.manual_seed(7)
    a = torch.randn(100, device="hpu")
    r = torch.rand(10, device="hpu")
    i = torch.randint(0, 10, (50,), device="hpu")
    torch.manual_seed(7)
    assert_same(torch.randn(100, device="hpu").cpu(), a.cpu())
    assert_same(torch.rand(10, device="hpu").cpu(), r.cpu())
    assert_same(i.cpu(), torch.randint(0, 10, (50,)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_device_ops(dtype):
    a = sample((4, 5), dtype, 1)
    b = sample((5,), dtype, 2)
    da, db = a.to("hpu"), b.to("hpu")
    before = hpu_torch.fallback_counts()
    results = [(da + db, a + b), (torch.add(da, db, alpha=2), torch.add(a, b, alpha=2)),
               (da * db, a * b), (da.t() * da.t(), a.t() * a.t()), (da * 3, a * 3),
               (da + 0.5, a + 0.5), (torch.relu(da), torch.relu(a)),
               (torch.relu(da[:, 1::2]), torch.relu(a[:, 1::2]))]
    assert hpu_torch.fallback_counts() == before, "ran on the CPU"
    for got, want in results:
        assert_same(got.cpu(), want)
    ints = torch.arange(-3, 3).to("hpu")
    assert_same(torch.relu(ints).cpu(), torch.relu(torch.arange(-3, 3)))


def test_ops_the_device_cannot_take_fall_back():
    n = fallbacks("aten::add")
    a, b = sample((3,), torch.float16), sample((3,), torch.float16, 1)
    assert_same((a.to("hpu") + b.to("hpu")).cpu(), a + b)
    i = sample((3,), torch.int16)
    assert_same((i.to("hpu") + b.to("hpu")).cpu(), i + b)
    assert fallbacks("aten::add") == n + 2


def test_fallback_counted_and_logged(capfd, monkeypatch):
    x = torch.rand(6, generator=torch.Generator().manual_seed(5)).to(torch.bfloat16) + 0.5
    dx = x.to("hpu")
    capfd.readouterr()
    n = fallbacks("aten::digamma")
    monkeypatch.setenv("LOG_LEVEL_PT_FALLBACK", "1")
    got = torch.digamma(dx)
    assert got.device == HPU
    assert_same(got.cpu(), torch.digamma(x))
    assert fallbacks("aten::digamma") == n + 1
    err = capfd.readouterr().err
    assert "CPU fallback digamma : self=HPUBFloat16Type\n" in err
    # In place and out=: the results are written back to the device tensors.
    dy = dx.clone()
    dy.exp_()
    assert_same(dy.cpu(), x.exp())
    out = torch.empty(0, dtype=torch.bfloat16, device="hpu")
    torch.atan2(dx, dx * 2, out=out)
    assert_same(out.cpu(), torch.atan2(x, x * 2))
    assert "CPU fallback atan2 : self=HPUBFloat16Type, other=HPUBFloat16Type\n" in \
        capfd.readouterr().err
    monkeypatch.setenv("LOG_LEVEL_PT_FALLBACK", "3")
    torch.digamma(dx)
    assert capfd.readouterr().err == ""
    assert fallbacks("aten::digamma") == n + 2


def test_fallback_frequency_table(capfd, monkeypatch):
    torch.lgamma(torch.ones(2, device="hpu"))
    monkeypatch.setenv("LOG_LEVEL_PT_FALLBACK", "1")
    capfd.readouterr()
    hpu_torch._fallback._frequency_table()
    err = capfd.readouterr().err.splitlines()
    assert err[0] == "Frequency of op and op name that were executed on CPU:"
    assert f"{fallbacks('aten::lgamma')} aten::lgamma" in err[1:]


def test_streams_and_events():
    default = torch.hpu.current_stream()
    assert default == torch.hpu.default_stream()
    s = torch.hpu.Stream()
    assert s != default
    x = sample((256, 256), torch.float32).to("hpu")
    s.wait_stream(torch.hpu.current_stream())
    with torch.hpu.stream(s):
        assert torch.hpu.current_stream() == s
        start, end = torch.hpu.Event(enable_timing=True), torch.hpu.Event(enable_timing=True)
        start.record()
        y = x * 2 + x
        end.record()
    assert torch.hpu.current_stream() == default
    end.synchronize()
    assert end.query() and s.query()
    torch.hpu.current_stream().wait_stream(s)
    assert start.elapsed_time(end) >= 0
    assert_same(y.cpu(), x.cpu() * 2 + x.cpu())
    s.synchronize()
    torch.hpu.synchronize()


def test_freed_memory_is_reused_only_after_its_work():
    """A storage freed while an op on another stream still reads it keeps its contents for
    that op, whatever is allocated and written next."""
    n = 1 << 20
    s = torch.hpu.Stream()
    for _ in range(4):
        src = torch.full((n,), 3.0, device="hpu")
        s.wait_stream(torch.hpu.current_stream())
        with torch.hpu.stream(s):
            out = src * 2
        del src
        fresh = [torch.full((n,), 7.0, device="hpu") for _ in range(3)]
        torch.hpu.current_stream().wait_stream(s)
        assert torch.equal(out.cpu(), torch.full((n,), 6.0))
        assert all(torch.equal(f.cpu(), torch.full((n,), 7.0)) for f in fresh)


def test_resize_grows_storage():
    t = torch.arange(6, dtype=torch.float32).to("hpu")
    t.resize_(4, 4)
    assert t.shape == (4, 4)
    assert_same(t.view(-1)[:6].cpu(), torch.arange(6, dtype=torch.float32))
    t.resize_(2)
    assert_same(t.cpu(), torch.tensor([0.0, 1.0]))


def test_autograd_through_the_device():
    x = sample((3, 4), torch.float32).to("hpu").requires_grad_()
    loss = (torch.relu(x) * x).sum()
    loss.backward()
    xc = x.detach().cpu().requires_grad_()
    (torch.relu(xc) * xc).sum().backward()
    assert x.grad.device == HPU
    assert_same(x.grad.cpu(), xc.grad)
