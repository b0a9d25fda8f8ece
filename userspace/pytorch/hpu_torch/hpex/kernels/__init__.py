# SPDX-License-Identifier: MIT
"""Fused kernels: ``FusedSDPA`` (Gaudi's ``hpex.kernels.FusedSDPA``), fused scaled dot-product
attention that never stores the [L, S] attention matrix, and its recompute switches (also
``torch.hpu.sdp_kernel``, ``enable_recompute_sdp``, ``recompute_sdp_enabled``)."""
from ._recompute import enable_recompute_sdp, recompute_sdp_enabled, sdp_kernel
from ._sdpa import FusedSDPA

__all__ = ["FusedSDPA", "sdp_kernel", "enable_recompute_sdp", "recompute_sdp_enabled"]
