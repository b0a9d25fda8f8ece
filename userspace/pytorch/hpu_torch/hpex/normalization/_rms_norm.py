# SPDX-License-Identifier: MIT
"""RMSNorm over the last dim as one device kernel each way (hpu::rms_norm and
hpu::rms_norm_backward, registered by the extension): PyTorch 1.13 has none.

y = x * rsqrt(mean(x^2 over the last dim) + eps) * weight, in x's dtype; the
reciprocal root is saved (fp32) for the backward, which computes the input's
and the weight's gradients in one launch.
"""
import torch

from ... import _C  # noqa: F401  registers the hpu:: ops


class FusedRMSNorm(torch.autograd.Function):
    """``FusedRMSNorm.apply(x, weight, eps)``: x an hpu tensor; weight [x.shape[-1]] or None."""

    @staticmethod
    def forward(ctx, x, weight, eps=1e-6):
        if x.device.type != "hpu":
            raise RuntimeError(f"FusedRMSNorm runs on hpu tensors, not on {x.device}")
        w = None if weight is None else weight.to(x.dtype)
        y, rstd = torch.ops.hpu.rms_norm(x, w, float(eps))
        ctx.save_for_backward(x, rstd, w)
        ctx.weight_dtype = None if weight is None else weight.dtype
        return y

    @staticmethod
    def backward(ctx, grad):
        x, rstd, w = ctx.saved_tensors
        grad_x, grad_w = torch.ops.hpu.rms_norm_backward(grad.to(x.dtype), x, rstd, w)
        if w is not None:
            grad_w = grad_w.to(ctx.weight_dtype)
        return grad_x, grad_w, None


class RMSNorm(torch.nn.Module):
    """RMSNorm over the last dim of size ``dim`` with a learned weight (ones at first):
    FusedRMSNorm on hpu, the same formula in PyTorch ops elsewhere."""

    def __init__(self, dim, eps=1e-6, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim, device=device, dtype=dtype))

    def forward(self, x):
        if x.device.type == "hpu":
            return FusedRMSNorm.apply(x, self.weight, self.eps)
        rstd = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return (x.float() * rstd).to(x.dtype) * self.weight.to(x.dtype)

    def extra_repr(self):
        return f"{self.weight.shape[0]}, eps={self.eps}"
