# SPDX-License-Identifier: MIT
"""Gaudi's ``habana_frameworks.torch.hpex``: the device's fused ops beyond PyTorch's."""
from . import hmp, kernels, normalization, optimizers

__all__ = ["hmp", "kernels", "normalization", "optimizers"]
