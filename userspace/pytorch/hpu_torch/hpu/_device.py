# SPDX-License-Identifier: MIT
"""Device arguments: an index, "hpu", "hpu:N", a torch.device or None (the current device)."""
import torch

from .. import _C


def _index(device=None):
    if device is None:
        return _C._current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != "hpu":
        raise ValueError(f"hpu: {device} is not an hpu device")
    return _C._current_device() if device.index is None else device.index
