# SPDX-License-Identifier: MIT
"""hpex.kernels.FusedSDPA on hpu, forward and backward, against the unfused attention on the
CPU: softmax(q k^T * scale + mask) v in float64 from the same (bf16: the same rounded) values,
with the causal mask torch.tril(ones(L, S)), valid lengths as key masks and zeroed padding
rows, and dropout as the mask FusedSDPA returns (or draws again from the same seed).

Tolerances: float32 outputs within rtol 2e-5, atol 2e-5 and gradients within 1e-4, 1e-4 (the
device multiplies in fp32 blocks, the reference in double); bfloat16 within rtol 1.6e-2, atol
2e-2 (outputs and gradients rounded to bf16 once, from fp32 math); fast softmax (bf16) the
same. Every misuse the seeds call unsupported raises with their reason. Nothing falls back.
"""
import math

import pytest
import torch

import hpu_torch
from hpu_torch.hpex.kernels import FusedSDPA, enable_recompute_sdp, recompute_sdp_enabled
from test_ops import HPU, fallback_diff

TOL = {torch.float32: (dict(rtol=2e-5, atol=2e-5), dict(rtol=1e-4, atol=1e-4)),
       torch.bfloat16: (dict(rtol=1.6e-2, atol=2e-2), dict(rtol=1.6e-2, atol=2e-2))}


def rand(shape, dtype, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) * scale).to(dtype)


def reference(q, k, v, mask=None, causal=False, scale=None, keep=None, p=0.0, lengths=None,
              left=False):
    """The unfused attention in float64 (q, k, v leaf tensors); keep: the dropout mask."""
    L, S = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = (q.double() @ k.double().transpose(-1, -2)) * scale
    seen = torch.ones(q.shape[0], 1, L, S, dtype=torch.bool)
    if mask is not None:
        if mask.dtype == torch.bool:
            seen = seen & mask
        else:
            s = s + mask.double()
    if causal:
        seen = seen & torch.ones(L, S, dtype=torch.bool).tril()
    if lengths is not None:
        i, j = torch.arange(L).view(1, L, 1), torch.arange(S).view(1, 1, S)
        n = lengths.cpu().view(-1, 1, 1)
        rows = (i + n >= L) if left else (i < n)
        keys = (j + n >= S) if left else (j < n)
        seen = seen & (rows & keys).unsqueeze(1)
    seen = seen.expand(s.shape)
    any_seen = seen.any(-1, keepdim=True)
    # A row that sees nothing gives 0 (softmax of no key), without NaN in the gradients.
    s = torch.where(seen, s, torch.full_like(s, -math.inf))
    s = torch.where(any_seen, s, torch.zeros_like(s))
    prob = torch.softmax(s, -1) * any_seen
    a = prob if keep is None else prob * keep.double() / (1 - p)
    return a @ v.double(), prob


def run(dtype, shape, *args, seed=0, grad_seed=9, noncontig=False, mask=None, ref_kw=None,
        **kw):
    """FusedSDPA on hpu and the reference on the CPU from the same values, out and the three
    gradients compared; ref_kw: the reference's settings, or a function of FusedSDPA's
    outputs giving them.  Returns the hpu outputs and the reference's probabilities."""
    B, H, L, S, D, Dv = shape
    if noncontig:  # [B, L, H, D] transposed: the layout of a model's heads
        q = rand((B, L, H, D), dtype, seed).transpose(1, 2)
        k = rand((B, S, H, D), dtype, seed + 1).transpose(1, 2)
        v = rand((B, S, H, Dv), dtype, seed + 2).transpose(1, 2)
    else:
        q, k, v = (rand(s, dtype, seed + i) for i, s in
                   enumerate([(B, H, L, D), (B, H, S, D), (B, H, S, Dv)]))
    grad = rand((B, H, L, Dv), dtype, grad_seed)
    cpu = [t.clone().requires_grad_() for t in (q, k, v)]
    dev = [t.to(HPU).requires_grad_() for t in (q, k, v)]
    assert dev[0].is_contiguous() != noncontig
    before = hpu_torch.fallback_counts()
    got = FusedSDPA.apply(*dev, None if mask is None else mask.to(HPU), *args, **kw)
    out = got[0] if isinstance(got, tuple) else got
    out.backward(grad.to(HPU))
    assert fallback_diff(before) == {}
    if callable(ref_kw):  # what the reference needs of the outputs: the dropout mask
        ref_kw = ref_kw(got)
    want, prob = reference(*cpu, mask=mask, **(ref_kw or {}))
    want.backward(grad.double())
    tol_out, tol_grad = TOL[dtype]
    assert out.dtype == dtype and out.shape == (B, H, L, Dv)
    torch.testing.assert_close(out.cpu().double(), want.detach(), **tol_out)
    for name, d, c in zip("qkv", dev, cpu):
        assert d.grad.dtype == dtype, name
        torch.testing.assert_close(d.grad.cpu().double(), c.grad.double(), **tol_grad)
    return got, prob


SHAPES = [(2, 3, 5, 7, 4, 6), (1, 2, 33, 65, 17, 9), (2, 2, 130, 150, 64, 32)]


@pytest.mark.parametrize("dtype", TOL, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("causal", [False, True])
def test_forward_backward(dtype, shape, causal):
    run(dtype, shape, 0.0, causal, ref_kw=dict(causal=causal))


@pytest.mark.parametrize("dtype", TOL, ids=str)
def test_noncontiguous_and_scale(dtype):
    run(dtype, (2, 4, 19, 23, 8, 8), 0.0, False, 0.3, noncontig=True, ref_kw=dict(scale=0.3))


@pytest.mark.parametrize("L,S", [(7, 40), (40, 7), (130, 3)])
def test_causal_l_ne_s(L, S):
    """is_causal hides key j from query i when j > i (top left), whatever L and S."""
    run(torch.float32, (1, 2, L, S, 5, 3), 0.0, True, ref_kw=dict(causal=True))


MASKS = {
    "bool_heads_broadcast": lambda B, H, L, S: torch.rand(B, 1, L, S) > 0.3,
    "float_rows_broadcast": lambda B, H, L, S: torch.randn(B, H, 1, S),
    "float_full": lambda B, H, L, S: torch.randn(B, H, L, S),
    "float_scalar_per_batch": lambda B, H, L, S: torch.randn(B, 1, 1, 1),
}


@pytest.mark.parametrize("dtype", TOL, ids=str)
@pytest.mark.parametrize("name", list(MASKS))
def test_masks(dtype, name):
    torch.manual_seed(3)
    mask = MASKS[name](2, 3, 9, 70)
    if mask.dtype != torch.bool:
        mask = mask.to(dtype)
    run(dtype, (2, 3, 9, 70, 8, 4), mask=mask)


@pytest.mark.parametrize("side", ["right", "left"])
def test_valid_sequence_lengths(side):
    lengths = torch.tensor([100, 130, 1], dtype=torch.int32)
    out, _ = run(torch.float32, (3, 2, 130, 130, 8, 8), 0.0, True, None, "None", None,
                 lengths.to(HPU), side, ref_kw=dict(causal=True, lengths=lengths,
                                                    left=side == "left"))
    # Padding rows of the output are zero.
    pad = out[2, :, :129] if side == "left" else out[2, :, 1:]
    assert pad.abs().max().item() == 0


def keep_of(p, causal=False):
    """The reference's settings given the dropout mask FusedSDPA returned."""
    return lambda got: dict(keep=got[1].cpu(), p=p, causal=causal)


def test_dropout_mask_regenerated():
    """No-recompute mode returns the dropout mask: out and the gradients match the unfused
    attention given that mask (so the backward regenerated it); recompute mode draws the
    same mask from the same seed, and the next call fresh ones."""
    p, shape = 0.3, (2, 2, 33, 75, 8, 8)
    torch.hpu.manual_seed(1234)
    (out, mask), _ = run(torch.float32, shape, p, False, None, "None", False, None, "right",
                         True, ref_kw=keep_of(p))
    keep = mask.cpu()
    assert keep.dtype == torch.bool and keep.shape == (2, 2, 33, 75)
    assert abs(keep.float().mean().item() - (1 - p)) < 0.05
    torch.hpu.manual_seed(1234)
    run(torch.float32, shape, p, False, None, "None", True, ref_kw=dict(keep=keep, p=p))
    q = rand((2, 2, 33, 8), torch.float32, 0).to(HPU)
    kv = rand((2, 2, 75, 8), torch.float32, 1).to(HPU)
    again = FusedSDPA.apply(q, kv, kv, None, p, False, None, "None", False, None, "right",
                            True)[1]
    assert not torch.equal(again.cpu(), keep)


def test_dropout_bf16_causal():
    torch.hpu.manual_seed(7)
    run(torch.bfloat16, (1, 2, 40, 40, 16, 16), 0.2, True, None, "None", False, None, "right",
        True, ref_kw=keep_of(0.2, causal=True))


def test_attn_probs_in_inference():
    q, k, v = (rand((2, 2, 11, 6), torch.float32, i) for i in range(3))
    with torch.no_grad():
        out, probs = FusedSDPA.apply(q.to(HPU), k.to(HPU), v.to(HPU), None, 0.0, True, None,
                                     "None", False, None, "right", False, True)
    want, prob = reference(q, k, v, causal=True)
    torch.testing.assert_close(out.cpu().double(), want, rtol=2e-5, atol=2e-5)
    torch.testing.assert_close(probs.cpu().double(), prob, rtol=2e-5, atol=2e-6)


def test_fast_softmax():
    """softmax_mode='fast' (bf16): within bf16's tolerance, in inference and in causal
    training in recompute mode."""
    q, k, v = (rand((2, 2, 50, 16), torch.bfloat16, i) for i in range(3))
    with torch.no_grad():
        out = FusedSDPA.apply(q.to(HPU), k.to(HPU), v.to(HPU), None, 0.0, False, None, "fast")
    torch.testing.assert_close(out.cpu().double(), reference(q, k, v)[0], rtol=1.6e-2,
                               atol=2e-2)
    run(torch.bfloat16, (2, 2, 50, 50, 16, 16), 0.0, True, None, "fast", True,
        ref_kw=dict(causal=True))


def test_keywords_and_defaults():
    q, k, v = (rand((1, 2, 9, 4), torch.float32, i).to(HPU) for i in range(3))
    a = FusedSDPA.apply(q, k, v, is_causal=True, scale=0.25)
    b = FusedSDPA.apply(q, k, v, None, 0.0, True, 0.25)
    assert torch.equal(a.cpu(), b.cpu())


def test_recompute_switches():
    assert recompute_sdp_enabled()
    assert torch.hpu.sdp_kernel is hpu_torch.hpex.kernels.sdp_kernel
    q, k, v = (rand((1, 1, 5, 4), torch.float32, i).to(HPU) for i in range(3))
    with torch.hpu.sdp_kernel(enable_recompute=False):
        assert not torch.hpu.recompute_sdp_enabled()
        # No-recompute mode from the context: the dropout mask may be returned.
        out, mask = FusedSDPA.apply(q, k, v, None, 0.1, True, None, "None", None, None,
                                    "right", True)
    assert recompute_sdp_enabled()
    with pytest.raises(RuntimeError, match="only in no-recompute mode"):
        FusedSDPA.apply(q, k, v, None, 0.1, True, None, "None", None, None, "right", True)
    enable_recompute_sdp(False)
    try:
        assert not recompute_sdp_enabled()
        FusedSDPA.apply(q, k, v, None, 0.1, True, None, "None", None, None, "right", True)
    finally:
        torch.hpu.enable_recompute_sdp(True)
    assert recompute_sdp_enabled()


def misuse_cases():
    q, k, v = (rand((2, 2, 6, 4), torch.float32, i).to(HPU) for i in range(3))
    qb, kb, vb = (t.to(torch.bfloat16) for t in (q, k, v))
    grad = [t.clone().requires_grad_() for t in (qb, kb, vb)]
    lengths = torch.tensor([3, 6], dtype=torch.int32).to(HPU)
    return {
        "cpu": ((q.cpu(), k.cpu(), v.cpu()), "runs on hpu tensors"),
        "float16": ((q.half(), k.half(), v.half()), "FP32 and BF16"),
        "mixed dtypes": ((q, kb, vb), "one dtype"),
        "3 dims": ((q[0], k[0], v[0]), "4 dims"),
        "key batch": ((q, k[:1], v[:1]), "broadcasting on batch size"),
        "mask batch": ((q, k, v, torch.ones(1, 1, 6, 6, dtype=torch.bool).to(HPU)),
                       "broadcasting on batch size"),
        "dropout 1": ((q, k, v, None, 1.0), "dropout_p"),
        "softmax mode": ((q, k, v, None, 0.0, False, None, "exact"), "softmax_mode"),
        "padding side": ((q, k, v, None, 0.0, True, None, "None", None, lengths, "middle"),
                         "padding_side"),
        "fast fp32": ((q, k, v, None, 0.0, True, None, "fast"),
                      "only BF16 data type is supported with fast Softmax"),
        "fast training": ((*grad, None, 0.0, False, None, "fast", True),
                          "not supported when running training in recompute mode"),
        "lengths not causal": ((q, k, v, None, 0.0, False, None, "None", None, lengths),
                               "only with is_causal=True and attn_mask=None"),
        "lengths and mask": ((q, k, v, torch.ones(2, 1, 6, 6, dtype=torch.bool).to(HPU), 0.0,
                              True, None, "None", None, lengths),
                             "only with is_causal=True and attn_mask=None"),
        "dropout mask recompute": ((q, k, v, None, 0.1, False, None, "None", True, None,
                                    "right", True), "only in no-recompute mode"),
        "probs in training": ((*grad, None, 0.0, False, None, "None", False, None, "right",
                               False, True), "only in inference"),
    }


@pytest.mark.parametrize("name", list(misuse_cases()))
def test_misuse(name):
    args, message = misuse_cases()[name]
    with pytest.raises((RuntimeError, ValueError), match=message):
        FusedSDPA.apply(*args)
