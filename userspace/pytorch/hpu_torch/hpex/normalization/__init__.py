# SPDX-License-Identifier: MIT
"""Fused normalizations: ``FusedRMSNorm`` (Gaudi's ``FusedRMSNorm.apply(x, weight, eps)``)."""
from ._rms_norm import FusedRMSNorm, RMSNorm

__all__ = ["FusedRMSNorm", "RMSNorm"]
