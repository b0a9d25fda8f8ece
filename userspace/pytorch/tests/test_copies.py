# SPDX-License-Identifier: MIT
"""Pinned memory, non_blocking copies, torch.save/load and deepcopy on hpu, negative and
conjugate views in copies: on the live device, against the CPU, bit for bit.

Asynchrony is observed without timing the copy itself: the copy is queued behind device
work calibrated to last seconds, and the stream (or an event after the copy) must still be
busy when the copy returns; a blocking copy must leave it idle.
"""
import copy
import io
import time

import pytest
import torch

import hpu_torch  # noqa: F401
from samples import sample

HPU = torch.device("hpu:0")
DTYPES = [torch.float32, torch.bfloat16, torch.int64, torch.int32, torch.bool, torch.uint8,
          torch.float64, torch.complex64]
SHAPES = [(), (0,), (7,), (3, 5), (2, 3, 4)]


def assert_same(got, want):
    assert got.device == want.device and got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got, want), f"got {got}\nwant {want}"


_busy_steps = []


def busy():
    """Enqueues device work on the current stream lasting at least 2 s; returns its result."""
    a = torch.full((512, 512), 1.0 / 512, device=HPU)
    if not _busy_steps:
        steps = 2
        while True:
            torch.hpu.synchronize()
            start = time.monotonic()
            r = a
            for _ in range(steps):
                r = r @ a
            torch.hpu.synchronize()
            if time.monotonic() - start >= 0.5:
                break
            steps *= 2
        _busy_steps.append(steps * 4)
    r = a
    for _ in range(_busy_steps[0]):
        r = r @ a
    return r


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_pinned_round_trips(dtype):
    for shape in SHAPES:
        x = sample(shape, dtype)
        p = x.pin_memory("hpu")
        assert p.is_pinned() and p.is_pinned("hpu") and not x.is_pinned()
        assert_same(p, x)
        assert p.pin_memory().data_ptr() == p.data_ptr()
        h = p.to(HPU, non_blocking=True)
        back = torch.zeros_like(x).pin_memory()
        back.copy_(h, non_blocking=True)
        torch.hpu.synchronize()
        assert_same(back, x)
        assert_same(h.cpu(), x)


def test_pin_memory_keeps_strides_and_views_stay_pinned():
    x = sample((4, 6), torch.float32).t()
    p = x.pin_memory()
    assert p.stride() == x.stride() and p.is_pinned()
    assert p[1:].is_pinned() and p[1:].to(HPU).cpu().equal(x[1:])
    # Not pinned: device tensors, the host tensors torch makes.
    assert not torch.ones(2, device=HPU).is_pinned()
    assert not (p + 1).is_pinned()


def test_copy_from_pinned_is_asynchronous():
    x = sample((64, 32), torch.float32, seed=1)
    p = x.pin_memory()
    stream = torch.hpu.current_stream()
    busy()
    h = p.to(HPU, non_blocking=True)
    assert not stream.query(), "a non_blocking copy waited for the stream"
    done = torch.hpu.Event()
    done.record()
    assert not done.query()
    done.synchronize()
    assert stream.query()
    assert_same(h.cpu(), x)
    # Blocking: returns with the copy done.
    busy()
    h = p.to(HPU)
    assert stream.query(), "a blocking copy from pinned memory returned before its data moved"
    assert_same(h.cpu(), x)


def test_copy_to_pinned_is_asynchronous():
    stream = torch.hpu.current_stream()
    r = busy()
    want = r.cpu()
    r = busy()
    out = torch.zeros(r.shape).pin_memory()
    out.copy_(r, non_blocking=True)
    assert not stream.query(), "a non_blocking copy to pinned memory waited"
    torch.hpu.synchronize()
    assert_same(out, want)
    # Blocking: the data is there when it returns.
    r = busy()
    out.zero_()
    out.copy_(r)
    assert stream.query()
    assert_same(out, want)


def test_pageable_copies_stay_synchronous():
    stream = torch.hpu.current_stream()
    x = sample((64,), torch.float32, seed=2)
    src = x.clone()
    busy()
    h = src.to(HPU, non_blocking=True)
    src.fill_(7)  # staged by libhpu: the caller may reuse its memory at once
    r = busy()
    back = r.to("cpu", non_blocking=True)
    assert stream.query(), "a copy to pageable memory returned before its data"
    assert_same(back, r.cpu())
    assert_same(h.cpu(), x)


def test_pinned_buffer_freed_while_copy_queued():
    # 256 KiB buffers: a few of them stay well within RLIMIT_MEMLOCK.
    x = sample((128, 512), torch.float32, seed=3)
    busy()
    p = x.pin_memory()
    h = p.to(HPU, non_blocking=True)
    del p
    # New pinned buffers, possibly where p was, overwritten while the copy is queued.
    others = [torch.full(x.shape, -1.0).pin_memory() for _ in range(3)]
    r = busy()[:128]
    out = torch.zeros(x.shape).pin_memory()
    out.copy_(r, non_blocking=True)
    del out
    # Were out's memory reused, the queued copy would land in one of these.
    fresh = [torch.zeros(x.shape).pin_memory() for _ in range(3)]
    torch.hpu.synchronize()
    assert_same(h.cpu(), x)
    for t in others:
        assert_same(t, torch.full(x.shape, -1.0))
    for t in fresh:
        assert_same(t, torch.zeros(x.shape))


def test_dataloader_pins_for_hpu():
    data = torch.utils.data.TensorDataset(sample((10, 3), torch.float32), torch.arange(10))
    loader = torch.utils.data.DataLoader(data, batch_size=4, pin_memory=True,
                                         pin_memory_device="hpu")
    got = []
    for xb, yb in loader:
        assert xb.is_pinned() and yb.is_pinned()
        got.append(xb.to(HPU, non_blocking=True))
    torch.hpu.synchronize()
    assert_same(torch.cat([g.cpu() for g in got]), data.tensors[0])


def saved(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def loaded(raw, **kw):
    return torch.load(io.BytesIO(raw), **kw)


def locations(raw):
    where = []
    torch.load(io.BytesIO(raw), map_location=lambda s, loc: where.append(loc) or s)
    return where


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool],
                         ids=str)
def test_save_load_tensor(dtype):
    x = sample((3, 4), dtype, seed=4)
    raw = saved(x.to(HPU))
    assert locations(raw) == ["hpu:0"]
    assert loaded(raw).device == HPU
    assert_same(loaded(raw).cpu(), x)
    assert_same(loaded(raw, map_location="cpu"), x)
    for where in ["hpu", "hpu:0", HPU, {"hpu:0": "hpu:0"}]:
        t = loaded(raw, map_location=where)
        assert t.device == HPU
        assert_same(t.cpu(), x)
    assert loaded(raw, map_location={"hpu:0": "cpu"}).device.type == "cpu"
    # A CPU file loads onto hpu too.
    assert_same(loaded(saved(x), map_location="hpu").cpu(), x)


def test_load_onto_a_device_this_process_lacks():
    raw = saved(torch.ones(2).to(HPU))
    missing = f"hpu:{torch.hpu.device_count()}"
    with pytest.raises(RuntimeError, match="map_location"):
        loaded(raw, map_location={"hpu:0": missing})


def test_save_load_keeps_views_and_grad():
    base = sample((6,), torch.float32, seed=5).to(HPU)
    p = torch.nn.Parameter(base.clone())
    a, b, q = loaded(saved([base, base[2:].view(2, 2), p]))
    assert b.device == HPU and b.storage_offset() == 2
    assert a.data_ptr() + 8 == b.data_ptr(), "views of one storage came back apart"
    assert_same(b.cpu(), base[2:].view(2, 2).cpu())
    assert isinstance(q, torch.nn.Parameter) and q.requires_grad and q.device == HPU


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def test_save_load_state_dict(tmp_path):
    model = mlp().to(HPU)
    path = tmp_path / "model.pt"
    torch.save(model.state_dict(), path)
    assert locations(path.read_bytes()) == ["hpu:0"] * 4
    state = torch.load(path)
    assert all(v.device == HPU for v in state.values())
    want = {k: v.cpu() for k, v in model.state_dict().items()}
    for k, v in state.items():
        assert_same(v.cpu(), want[k])
    cpu_model = mlp()
    for p in cpu_model.parameters():
        p.data.zero_()
    on_cpu = torch.load(path, map_location="cpu")
    assert all(v.device.type == "cpu" for v in on_cpu.values())
    cpu_model.load_state_dict(on_cpu)
    for k, v in cpu_model.state_dict().items():
        assert_same(v, want[k])
    hpu_model = mlp().to(HPU)
    for p in hpu_model.parameters():
        p.data.zero_()
    hpu_model.load_state_dict(torch.load(path, map_location="hpu"))
    for k, v in hpu_model.state_dict().items():
        assert v.device == HPU
        assert_same(v.cpu(), want[k])


def test_deepcopy_model():
    model = mlp().to(HPU)
    twin = copy.deepcopy(model)
    for (name, a), (_, b) in zip(model.named_parameters(), twin.named_parameters()):
        assert isinstance(b, torch.nn.Parameter) and b.device == HPU, name
        assert a.data_ptr() != b.data_ptr(), name
        assert_same(b.detach().cpu(), a.detach().cpu())
    with torch.no_grad():
        twin[0].weight.fill_(1)
    assert not torch.equal(model[0].weight.cpu(), twin[0].weight.cpu())


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64], ids=str)
def test_neg_and_conj_views_in_copies(dtype):
    x = sample((3, 5), dtype, seed=7)
    h = x.to(HPU)
    neg = torch._neg_view
    flips = [neg] + ([torch.conj] if dtype.is_complex else [])
    for flip in flips:
        want = flip(x).resolve_neg().resolve_conj()
        # From a view on the host, to one on the host, on the device, device to device.
        assert_same(flip(x).to(HPU).cpu(), want)
        assert_same(flip(x.pin_memory()).to(HPU, non_blocking=True).cpu(), want)
        cpu = torch.zeros_like(x)
        flip(cpu).copy_(h)
        assert_same(cpu, want)
        assert_same(flip(h).cpu(), want)
        dev = torch.zeros_like(h)
        dev.copy_(flip(h))
        assert_same(dev.cpu(), want)
        dev = torch.zeros_like(h)
        flip(dev).copy_(x)
        assert_same(dev.cpu(), want)
        dev = torch.zeros_like(h)
        flip(dev).copy_(h)
        assert_same(dev.cpu(), want)
    if dtype.is_complex:
        cpu = torch.zeros_like(x)
        cpu.conj().copy_(torch._neg_view(h))
        assert_same(cpu, (-x).conj())
