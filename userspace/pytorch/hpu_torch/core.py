# SPDX-License-Identifier: MIT
"""hpu_torch.core (habana_frameworks.torch.core): mark_step().

Ops run as they are called (eager mode): a step has nothing left to launch, so
mark_step() only waits for the device when sync is set.
"""
from . import _C
from .hpu._device import _index


def mark_step(device_str="", sync=False):
    """Ends a step; with sync, waits for the device's work."""
    if sync:
        _C._synchronize(_index(device_str or None))
