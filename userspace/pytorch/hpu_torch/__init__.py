# SPDX-License-Identifier: MIT
"""PyTorch on hpu devices.

``import hpu_torch`` registers the "hpu" device type with PyTorch: tensors on
``torch.device("hpu")`` live in libhpu's device memory, the ops the extension
registers run on the device, every other op runs on the CPU through the
fallback (counted: fallback_counts(); logged with LOG_LEVEL_PT_FALLBACK=1), and
``torch.hpu`` is :mod:`hpu_torch.hpu`.
"""
import torch

# Gaudi's variables onto libhpu's, before a device opens.
from . import _env  # noqa: F401
# Loading the extension registers the allocator, the device guard and the kernels.
from . import _C
from . import _fallback, _printing, _serialization, core, hpu
from ._fallback import fallback_counts

torch._register_device_module("hpu", hpu)

__all__ = ["hpu", "core", "fallback_counts"]
