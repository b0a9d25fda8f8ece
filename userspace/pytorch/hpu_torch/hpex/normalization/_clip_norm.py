# SPDX-License-Identifier: MIT
"""FusedClipNorm: torch.nn.utils.clip_grad_norm_ over any number of gradients on the device
(hpu::clip_norm): their norm summed on the device in a fixed order, then every gradient
scaled by min(1, max_norm / (norm + 1e-6)) read on the device (no host read, so it runs in
lazy mode and in a captured graph)."""
import math

import torch

from ... import _C  # noqa: F401  registers the hpu:: ops


class FusedClipNorm:
    """``FusedClipNorm(parameters, max_norm, norm_type=2.0)``; ``clip_norm(parameters)``
    clips the gradients of parameters (a tensor or an iterable; those without a gradient are
    skipped) and returns their total norm, a 0-dim float32 hpu tensor."""

    def __init__(self, parameters, max_norm, norm_type=2.0):
        max_norm, norm_type = float(max_norm), float(norm_type)
        if math.isnan(max_norm):
            raise ValueError("FusedClipNorm: max_norm is NaN")
        if norm_type not in (2.0, math.inf):
            raise ValueError(f"FusedClipNorm: norm_type {norm_type} is not 2 or inf")
        self.max_norm, self.norm_type = max_norm, norm_type
        del parameters  # Gaudi's signature: the parameters clipped are clip_norm()'s

    def clip_norm(self, parameters):
        if isinstance(parameters, torch.Tensor):
            parameters = [parameters]
        grads = [p.grad for p in parameters if p.grad is not None]
        if not grads:
            return torch.tensor(0.0)
        return torch.ops.hpu.clip_norm(grads, self.max_norm, self.norm_type)
