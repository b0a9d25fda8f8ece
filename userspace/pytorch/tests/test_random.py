# SPDX-License-Identifier: MIT
"""Uniform and normal fills on the device's Philox generator (ops_random.cpp).

torch.rand, torch.randn, Tensor.uniform_/normal_ and nn.init on hpu draw on
the device from the state dropout uses: the values are Philox4x32-10's
draws (checked against a Python reference of the block function, seed
from torch.manual_seed, offsets continuing across calls), repeat per seed,
differ per call and per replay of a captured graph.  Moments over 2^20
values within 5 standard errors (the draws are deterministic per seed: a
bound holds or fails every run).  An explicit CPU generator keeps the
host's draw; parameters PyTorch refuses raise its errors.
"""
import math
import subprocess
import sys
import textwrap

import pytest
import torch

import hpu_torch
from test_ops import HPU, fallback_diff

M0, M1, W0, W1, MASK = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85, 0xFFFFFFFF


def philox(ctr, key):
    """Random123's philox4x32_R(10, ctr, key)."""
    c, (k0, k1) = list(ctr), key
    for _ in range(10):
        p0, p1 = M0 * c[0], M1 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & MASK, (p0 >> 32) ^ c[3] ^ k1, p0 & MASK]
        k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
    return c


def draw(seed, m):
    """Position m of seed's stream: word m % 4 of block m // 4, its top 24 bits in [0, 1)."""
    b = m // 4
    w = philox([b & MASK, b >> 32, 0, 0], [seed & MASK, seed >> 32])[m % 4]
    return (w >> 8) / 2.0 ** 24


def test_values_are_the_device_streams():
    """rand draws positions 0.., the next call continues; randn takes pairs (Box-Muller)."""
    torch.manual_seed(1234)
    before = hpu_torch.fallback_counts()
    u = torch.rand(9, device=HPU).cpu().double()
    v = torch.empty(5, device=HPU).uniform_(-2, 3).cpu().double()
    z = torch.randn(6, device=HPU).cpu().double()
    assert fallback_diff(before) == {}
    want_u = [draw(1234, k) for k in range(9)]
    want_v = [-2 + 5 * draw(1234, 9 + k) for k in range(5)]
    want_z = [math.sqrt(-2 * math.log(1 - draw(1234, 14 + 2 * k))) *
              math.cos(2 * math.pi * draw(1234, 15 + 2 * k)) for k in range(6)]
    for got, want in ((u, want_u), (v, want_v), (z, want_z)):
        torch.testing.assert_close(got, torch.tensor(want, dtype=torch.double), rtol=1e-6,
                                   atol=1e-6)


def test_same_seed_same_values_calls_differ():
    for seed_fn in (torch.manual_seed, torch.hpu.manual_seed):
        seed_fn(5)
        a, b = torch.rand(1000, device=HPU).cpu(), torch.randn(1000, device=HPU).cpu()
        c = torch.rand(1000, device=HPU).cpu()
        seed_fn(5)
        assert torch.equal(torch.rand(1000, device=HPU).cpu(), a)
        assert torch.equal(torch.randn(1000, device=HPU).cpu(), b)
        assert not torch.equal(a, c)
    torch.manual_seed(6)
    assert not torch.equal(torch.rand(1000, device=HPU).cpu(), a)


def test_strided_and_bf16():
    """A strided view gets its elements in row-major order; bf16 rounds each value."""
    torch.manual_seed(9)
    dense = torch.rand(6, 8, device=HPU).cpu()
    torch.manual_seed(9)
    x = torch.zeros(8, 6, device=HPU)
    x.t().uniform_()
    assert torch.equal(x.t().cpu(), dense)
    torch.manual_seed(9)
    b = torch.rand(6, 8, device=HPU, dtype=torch.bfloat16).cpu()
    assert torch.equal(b, dense.bfloat16())


def moments(x):
    x = x.double()
    m = x.mean()
    d = x - m
    var = (d * d).mean()
    return m.item(), var.item(), ((d ** 3).mean() / var ** 1.5).item(), \
        ((d ** 4).mean() / var ** 2).item()


def test_moments():
    n = 1 << 20
    torch.manual_seed(11)
    u = torch.empty(n, device=HPU).uniform_(-2, 3).cpu()
    mean, var, _, _ = moments(u)
    assert u.min() >= -2 and u.max() < 3
    assert abs(mean - 0.5) < 5 * math.sqrt(25 / 12 / n)
    assert abs(var - 25 / 12) < 5 * math.sqrt(625 * (1 / 80 - 1 / 144) / n)
    z = torch.empty(n, device=HPU).normal_(1.5, 2).cpu()
    mean, var, skew, kurt = moments(z)
    assert abs(mean - 1.5) < 5 * 2 / math.sqrt(n)
    assert abs(var - 4) < 5 * 4 * math.sqrt(2 / n)
    assert abs(skew) < 5 * math.sqrt(6 / n) and abs(kurt - 3) < 5 * math.sqrt(24 / n)


def test_nn_init_on_device():
    torch.manual_seed(3)
    w = torch.empty(256, 128, device=HPU)
    before = hpu_torch.fallback_counts()
    torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    assert fallback_diff(before) == {}
    bound = 1 / math.sqrt(128)
    host = w.cpu()
    assert host.abs().max() <= bound and host.abs().max() > 0.99 * bound
    assert abs(host.var().item() - bound ** 2 / 3) < 5 * bound ** 2 * math.sqrt(4 / 45 / w.numel())
    torch.manual_seed(3)
    again = torch.empty(256, 128, device=HPU)
    torch.nn.init.kaiming_uniform_(again, a=math.sqrt(5))
    assert torch.equal(again.cpu(), host)
    torch.nn.init.normal_(again, 0, 0.02)
    assert abs(again.cpu().std().item() - 0.02) < 0.001


def test_explicit_cpu_generator_keeps_the_host_draw():
    got = torch.empty(50, device=HPU).uniform_(-1, 1, generator=torch.Generator().manual_seed(4))
    want = torch.empty(50).uniform_(-1, 1, generator=torch.Generator().manual_seed(4))
    assert torch.equal(got.cpu(), want)
    got = torch.randn(50, device=HPU, generator=torch.Generator().manual_seed(4))
    assert torch.equal(got.cpu(), torch.randn(50, generator=torch.Generator().manual_seed(4)))


def test_graph_replays_draw_anew():
    # As dropout: the replays advance the generator's offset in device memory.  In a process
    # of its own, whose first draw is the captured one.
    run = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import torch
        import hpu_torch
        x = torch.empty(64, 64, device="hpu")
        g = torch.hpu.HPUGraph()
        with torch.hpu.graph(g):
            x.uniform_(-1, 1)
            y = x * 2
        draws = []
        for _ in range(3):
            g.replay()
            draws.append(y.cpu())
        assert not torch.equal(draws[0], draws[1]) and not torch.equal(draws[1], draws[2])
        assert all(d.abs().max() <= 2 and abs(d.mean().item()) < 0.1 for d in draws)
        print("replayed")
    """)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "replayed" in run.stdout, run.stderr


def test_refused_as_pytorch():
    x = torch.empty(4, device=HPU)
    with pytest.raises(RuntimeError, match=r"from=1.* > to=0"):
        x.uniform_(1, 0)
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        x.normal_(0, -1)
