# SPDX-License-Identifier: MIT
"""FusedSDPA: softmax(q k^T * scale + mask) v with dropout, as one device kernel each way
(hpu::sdpa and hpu::sdpa_backward, registered by the extension), flash-attention style: the
forward keeps each row's logsumexp and the backward recomputes the probabilities from it
block by block, the dropout mask from the generator state the forward drew from.

Recompute mode and no-recompute mode run the same kernels here: keeping the probabilities
would cost the [B, H, L, S] memory the fused kernel exists to avoid, to save their
recomputation, two of the backward's seven block GEMMs and their exp (an estimate of under a
third of its time, not measured). The modes differ in what they allow, as the seeds state
(returning the dropout mask needs no-recompute mode).
"""
import inspect
import math

import torch

from ... import _C  # noqa: F401  registers the hpu:: ops
from ._recompute import recompute_sdp_enabled

_DTYPES = (torch.float32, torch.bfloat16)


def _check(q, k, v, attn_mask, dropout_p, is_causal, softmax_mode, recompute,
           valid_sequence_lengths, padding_side, return_dropout_mask, return_attn_probs,
           training):
    for name, t in (("query", q), ("key", k), ("value", v)):
        if not isinstance(t, torch.Tensor) or t.device.type != "hpu":
            raise RuntimeError(f"FusedSDPA runs on hpu tensors: {name} is not one")
        if t.dtype not in _DTYPES:
            raise RuntimeError(f"FusedSDPA: the supported data types are FP32 and BF16, "
                               f"not {t.dtype} ({name})")
        if t.dim() != 4:
            raise RuntimeError(f"FusedSDPA wants {name} of 4 dims [B, H, L or S, D], "
                               f"not {tuple(t.shape)}")
    if not q.dtype == k.dtype == v.dtype:
        raise RuntimeError("FusedSDPA wants query, key and value of one dtype")
    if not q.shape[0] == k.shape[0] == v.shape[0] or (
            attn_mask is not None and (attn_mask.dim() != 4 or attn_mask.shape[0] != q.shape[0])):
        raise RuntimeError("FusedSDPA does not support broadcasting on batch size dimension. "
                           "Input tensors should have same batch size.")
    if not 0 <= dropout_p < 1:
        raise ValueError(f"FusedSDPA: dropout_p must be in [0, 1), not {dropout_p}")
    if softmax_mode not in ("None", "fast"):
        raise ValueError(f"FusedSDPA: softmax_mode is 'None' or 'fast', not {softmax_mode!r}")
    if padding_side not in ("left", "right"):
        raise ValueError(f"FusedSDPA: padding_side is 'left' or 'right', not {padding_side!r}")
    if softmax_mode == "fast":
        if q.dtype != torch.bfloat16:
            raise RuntimeError("FusedSDPA: only BF16 data type is supported with fast Softmax")
        if training and recompute and not is_causal:
            raise RuntimeError("FusedSDPA: fast Softmax is not supported when running "
                               "training in recompute mode with is_causal = False")
    if valid_sequence_lengths is not None and (not is_causal or attn_mask is not None):
        raise RuntimeError("FusedSDPA: valid_sequence_lengths is supported only with "
                           "is_causal=True and attn_mask=None")
    if return_dropout_mask and recompute:
        raise RuntimeError("FusedSDPA: returning dropout mask is supported only in "
                           "no-recompute mode")
    if return_attn_probs and training:
        raise RuntimeError("FusedSDPA: returning attention probabilities is supported only "
                           "in inference")


class FusedSDPA(torch.autograd.Function):
    """``FusedSDPA.apply(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
    scale=None, softmax_mode='None', recompute_mode=None, valid_sequence_lengths=None,
    padding_side='left', return_dropout_mask=False, return_attn_probs=False)``.

    query [B, H, L, D], key [B, H, S, D], value [B, H, S, Dv]: hpu tensors, float32 or
    bfloat16. attn_mask: bool (True attends) or float (added to the scores), of 4 dims
    [B, 1 or H, 1 or L, 1 or S]. scale: 1 / sqrt(D) if None. recompute_mode: True, False or
    None (the mode ``sdp_kernel`` / ``enable_recompute_sdp`` set). valid_sequence_lengths:
    int32/int64 [B] (with is_causal and no mask), padding on padding_side. Returns out, then
    the attention probabilities and the dropout mask (bool) when asked, in that order.
    """

    @classmethod
    def apply(cls, *args, **kwargs):
        """The arguments by position or name; whether this is training (a gradient will be
        wanted) is known only here: forward runs with grad mode off."""
        bound = inspect.signature(cls.forward).bind(None, *args, **kwargs)
        bound.apply_defaults()
        values = list(bound.arguments.values())[1:-1]
        training = torch.is_grad_enabled() and any(
            isinstance(t, torch.Tensor) and t.requires_grad for t in values[:3])
        return super().apply(*values, training)

    @staticmethod
    def forward(ctx, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                scale=None, softmax_mode="None", recompute_mode=None,
                valid_sequence_lengths=None, padding_side="left", return_dropout_mask=False,
                return_attn_probs=False, training=False):
        recompute = recompute_sdp_enabled() if recompute_mode is None else bool(recompute_mode)
        _check(query, key, value, attn_mask, dropout_p, is_causal, softmax_mode, recompute,
               valid_sequence_lengths, padding_side, return_dropout_mask, return_attn_probs,
               training)
        scale = 1 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
        args = (float(dropout_p), bool(is_causal), scale, softmax_mode == "fast")
        out, lse, rng_used, probs, drop_mask = torch.ops.hpu.sdpa(
            query, key, value, attn_mask, *args, valid_sequence_lengths,
            padding_side == "left", bool(return_attn_probs), bool(return_dropout_mask))
        ctx.save_for_backward(query, key, value, out, lse, attn_mask, valid_sequence_lengths,
                              rng_used)
        ctx.args = args + (padding_side == "left",)
        extras = [t for t in (probs, drop_mask) if t is not None]
        ctx.mark_non_differentiable(*extras)
        return (out, *extras) if extras else out

    @staticmethod
    def backward(ctx, grad, *unused):
        q, k, v, out, lse, mask, lengths, rng_used = ctx.saved_tensors
        dropout_p, is_causal, scale, fast, pad_left = ctx.args
        gq, gk, gv = torch.ops.hpu.sdpa_backward(
            grad.to(q.dtype), q, k, v, out, lse, mask, lengths, rng_used, dropout_p,
            is_causal, scale, fast, pad_left)
        return (gq, gk, gv) + (None,) * 11
