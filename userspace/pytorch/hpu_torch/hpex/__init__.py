# SPDX-License-Identifier: MIT
"""Gaudi's ``habana_frameworks.torch.hpex``: the device's fused ops beyond PyTorch's."""
from . import hmp, normalization

__all__ = ["hmp", "normalization"]
