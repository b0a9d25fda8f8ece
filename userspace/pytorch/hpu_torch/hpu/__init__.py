# SPDX-License-Identifier: MIT
"""torch.hpu: the hpu devices, their streams, events, memory and generators.

The API of PyTorch's device modules (torch.cuda's shape): devices are numbered
as libhpu numbers them and opened on first use; the current device and each
device's current stream are per thread.
"""
from .. import _C
from ._device import _index
from .memory import (empty_cache, max_memory_allocated, memory_allocated, memory_reserved,
                     memory_stats, reset_peak_memory_stats)
from .random import manual_seed, manual_seed_all
from .streams import Event, Stream, current_stream, default_stream, set_stream, stream
from . import metrics
from .graphs import HPUGraph, ModuleCacher, graph, make_graphed_callables, wrap_in_hpu_graph
from ..hpex.kernels._recompute import enable_recompute_sdp, recompute_sdp_enabled, sdp_kernel


def is_available():
    """Whether an hpu device is present."""
    return device_count() > 0


def device_count():
    return _C._device_count()


def current_device():
    return _C._current_device()


def set_device(device):
    """Makes device (an index, "hpu:N" or a torch.device) the thread's current one."""
    _C._set_device(_index(device))


def synchronize(device=None):
    """Waits for all the work enqueued on the device's streams so far."""
    _C._synchronize(_index(device))


class device:
    """Context manager: device is the current one inside."""

    def __init__(self, device):
        self.index = _index(device)

    def __enter__(self):
        self.prev = current_device()
        _C._set_device(self.index)

    def __exit__(self, *exc):
        _C._set_device(self.prev)


__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize",
           "device", "Stream", "Event", "current_stream", "default_stream", "set_stream",
           "stream", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "memory_stats", "reset_peak_memory_stats", "empty_cache", "manual_seed",
           "manual_seed_all", "HPUGraph", "graph", "make_graphed_callables", "ModuleCacher",
           "wrap_in_hpu_graph", "metrics", "sdp_kernel", "enable_recompute_sdp",
           "recompute_sdp_enabled"]
