# SPDX-License-Identifier: MIT
"""Fused normalizations: ``FusedRMSNorm`` (Gaudi's ``FusedRMSNorm.apply(x, weight, eps)``) and
``FusedClipNorm`` (gradient norm clipping)."""
from ._clip_norm import FusedClipNorm
from ._rms_norm import FusedRMSNorm, RMSNorm

__all__ = ["FusedClipNorm", "FusedRMSNorm", "RMSNorm"]
