# SPDX-License-Identifier: MIT
"""The index kernels at the HPU key (index_select, gather, scatter_add, scatter, index_add,
topk), forward and backward, against PyTorch on the CPU.

Cases run through test_ops.check(): a function on hpu and on the CPU from the same values,
outputs and the gradients of every floating input compared, none of its ops falling back to
the CPU.  Gathers and topk copy elements, exact; sums (scatter_add, index_add, every backward
with repeated indices) are within check()'s float32 tolerance (rtol 1e-5, atol 1e-5: the
device sums in double and rounds once, the CPU rounds every add) and its bfloat16 one against
the CPU's float32 result from the same values (rtol 1.6e-2, atol 2e-2: a few roundings of
2^-8).
"""
import pytest
import torch

import hpu_torch
from test_ops import HPU, FLOATS, check, fallback_diff


def randint(hi, *shape, seed=0, dtype=torch.long):
    return torch.randint(0, hi, shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


SHAPE = (3, 4, 5)
DIMS = [0, 1, 2, -1, -3]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", DIMS)
def test_index_select(dim, dtype):
    """Repeated indices (the backward sums them), Int and Long indices, every dim."""
    n = SHAPE[dim]
    for index_dtype in (torch.long, torch.int):
        idx = torch.cat([randint(n, 2 * n + 1, seed=dim, dtype=index_dtype),
                         torch.tensor([0, 0], dtype=index_dtype)])
        check(lambda x, i: x.index_select(dim, i), SHAPE, idx, dtype=dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", DIMS)
def test_gather(dim, dtype):
    """index larger along dim and smaller elsewhere; the backward is scatter_add."""
    shape = [max(s - 1, 1) for s in SHAPE]
    shape[dim] = 2 * SHAPE[dim] + 1
    check(lambda x, i: torch.gather(x, dim, i), SHAPE, randint(SHAPE[dim], *shape, seed=3),
          dtype=dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", DIMS)
def test_scatter_add(dim, dtype):
    """Duplicates add; gradients reach self and src (through gather: PyTorch's backward takes
    src of index's shape); a larger src forward only."""
    shape = [max(s - 1, 1) for s in SHAPE]
    shape[dim] = 3 * SHAPE[dim]
    idx = randint(SHAPE[dim], *shape)
    check(lambda s, i, x: s.scatter_add(dim, i, x), SHAPE, idx, tuple(shape), dtype=dtype)
    check(lambda s, i, x: s.scatter_add(dim, i, x), SHAPE, idx, tuple(s + 1 for s in shape),
          dtype=dtype, grad=False)


@pytest.mark.parametrize("dim", DIMS)
def test_scatter_and_index_add_inplace(dim):
    """The in-place variants, index_add (its backward is index_select) and scatter_ of a src
    (its backward scatters zeros and gathers) or a number, on the device."""
    n = SHAPE[dim]
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(5))
    rows = list(SHAPE)
    rows[dim] = 7
    check(lambda s, i, x: (s * 1).index_add_(dim, i, x), SHAPE,
          randint(n, 7, seed=4, dtype=torch.int), tuple(rows))
    # Unique indices along dim: scatter_ writes each place once, as the CPU's.
    idx = perm.view([-1 if d == dim % 3 else 1 for d in range(3)]).expand(SHAPE).contiguous()
    check(lambda s, i, x: (s * 1).scatter_(dim, i, x), SHAPE, idx, SHAPE)
    check(lambda s, i: (s * 1).scatter_(dim, i[:2], -2.5), SHAPE, idx)
    check(lambda s, i, x: (s * 1).scatter_add_(dim, i, x), SHAPE, randint(n, *SHAPE), SHAPE)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", DIMS)
def test_topk(dim, dtype):
    """k from 0 to n, largest and smallest; the backward scatters into zeros."""
    for k in range(SHAPE[dim] + 1):
        for largest in (True, False):
            check(lambda t: torch.topk(t, k, dim=dim, largest=largest), SHAPE, dtype=dtype,
                  seed=k)


def test_topk_ties_nan_and_integers():
    """NaN ranks above every number; ties pick the same values (the CPU's indices may
    differ among equal values: the device takes the lower index first)."""
    x = torch.tensor([[1., float("nan"), 3., 3., -1., float("nan")], [2., 2., 2., 0., 5., 2.]])
    dev = x.to(HPU)
    before = hpu_torch.fallback_counts()
    for largest in (True, False):
        for k in (0, 3, 6):
            v, i = torch.topk(dev, k, largest=largest)
            w, _ = torch.topk(x, k, largest=largest)
            torch.testing.assert_close(v.cpu(), w, equal_nan=True)
            torch.testing.assert_close(x.gather(1, i.cpu()), w, equal_nan=True)
            assert all(len(set(r)) == k for r in i.cpu().tolist())
    v, i = torch.topk(dev, 4)
    assert i.cpu().tolist() == [[1, 5, 2, 3], [4, 0, 1, 2]]
    ints = randint(50, 4, 9, seed=9) - 25
    for dtype in (torch.long, torch.int):
        v, i = ints.to(dtype).to(HPU).topk(3, dim=0, largest=False)
        assert torch.equal(v.cpu(), ints.to(dtype).topk(3, dim=0, largest=False).values)
        assert torch.equal(ints.to(dtype).gather(0, i.cpu()), v.cpu())
    assert fallback_diff(before) == {}


def test_non_contiguous_inputs():
    """Transposed, sliced and expanded operands are read in place."""
    i = randint(4, 5, 4, seed=2)
    check(lambda t, j: torch.gather(t.t()[1::2], 0, j.t()), (6, 8), i)
    check(lambda t, j: t[:, ::2].index_select(0, j[::2]), (6, 8), randint(6, 9, seed=3))
    check(lambda t: torch.topk(t.t(), 3, dim=0), (6, 8))
    check(lambda s, j, t: s.t().scatter_add(1, j.t(), t[:, 1:]), (8, 6), i, (4, 6))


def test_other_dtypes_and_empty():
    """Long, Int and bool data are gathered exactly; empty indices and tensors."""
    x = randint(100, 4, 5, seed=1)
    check(lambda t, j: (t.index_select(1, j), t > 50), x, randint(5, 3), grad=False)
    check(lambda t, j: torch.gather(t > 50, 0, j), x, randint(4, 2, 5), grad=False)
    check(lambda t, j: t.scatter_add(0, j, t), x, randint(4, 4, 5), grad=False)
    check(lambda t, j: t.index_select(0, j), (4, 5), torch.zeros(0, dtype=torch.long))
    check(lambda t, j: torch.gather(t, 1, j), (4, 5), torch.zeros(4, 0, dtype=torch.long))
    check(lambda t: t.topk(1), ())


def test_training_step_keeps_to_the_device():
    """An embedding-like lookup by index_select and a top-k loss train on the device."""
    w = torch.randn(10, 4, generator=torch.Generator().manual_seed(0))
    ref = w.clone().requires_grad_()
    w = w.to(HPU).requires_grad_()
    idx = torch.tensor([1, 3, 3, 7]).to(HPU)
    before = hpu_torch.fallback_counts()
    for _ in range(3):
        loss = w.index_select(0, idx).topk(2, dim=1).values.sum()
        loss.backward()
        with torch.no_grad():
            w -= 0.1 * w.grad
            w.grad.zero_()
    assert fallback_diff(before) == {}
    for _ in range(3):
        loss = ref.index_select(0, idx.cpu()).topk(2, dim=1).values.sum()
        loss.backward()
        with torch.no_grad():
            ref -= 0.1 * ref.grad
            ref.grad.zero_()
    torch.testing.assert_close(w.detach().cpu(), ref.detach())


MISUSE = {
    "gather_int_index": lambda d: torch.gather(torch.ones(3, device=d), 0,
                                               torch.zeros(2, dtype=torch.int, device=d)),
    "gather_dims": lambda d: torch.gather(torch.ones(3, 2, device=d), 0,
                                          torch.zeros(2, dtype=torch.long, device=d)),
    "index_select_2d_index": lambda d: torch.ones(3, device=d).index_select(
        0, torch.zeros(2, 2, dtype=torch.long, device=d)),
    "topk_k": lambda d: torch.ones(3, device=d).topk(4),
    "scatter_add_sizes": lambda d: torch.ones(2, 3, device=d).scatter_add(
        0, torch.zeros(3, 3, dtype=torch.long, device=d), torch.ones(2, 3, device=d)),
}


def first_error(fn, device):
    with pytest.raises((RuntimeError, IndexError)) as e:
        fn(device)
    return type(e.value), str(e.value).splitlines()[0]


@pytest.mark.parametrize("name", MISUSE)
def test_misuse_raises_as_on_cpu(name):
    """Calls PyTorch refuses are refused with the CPU's errors."""
    assert first_error(MISUSE[name], HPU) == first_error(MISUSE[name], "cpu")


BAD_INDEX = {
    "index_select": lambda x, i: x.index_select(1, i),
    "gather": lambda x, i: torch.gather(x, 1, i.expand(3, 2).contiguous()),
    "scatter_add": lambda x, i: x.scatter_add(1, i.expand(3, 2).contiguous(), x[:, :2] * 1),
    "index_add": lambda x, i: (x * 1).index_add_(1, i, x[:, :2] * 1),
}


@pytest.mark.parametrize("bad", [5, -1])
@pytest.mark.parametrize("name", BAD_INDEX)
def test_bad_index_is_an_error_and_the_device_stays_usable(name, bad):
    """An index out of range (or negative) fails on the device, not past its tensors: Python
    gets a RuntimeError, and the next ops on the device compute as before."""
    x = torch.randn(3, 4).to(HPU)
    i = torch.tensor([1, bad]).to(HPU)
    with pytest.raises(RuntimeError):
        BAD_INDEX[name](x, i).cpu()
    torch.hpu.synchronize()
    good = torch.tensor([1, 2]).to(HPU)
    torch.testing.assert_close(BAD_INDEX[name](x, good).cpu(), BAD_INDEX[name](x.cpu(),
                                                                               good.cpu()))
