# SPDX-License-Identifier: MIT
"""Device memory as PyTorch's tensors use it.

memory_allocated() counts the bytes of the storages PyTorch holds on the
device; memory_reserved() is what libhpu's caching allocator holds for them
and for itself.  memory_stats() names its figures as Gaudi's PyTorch does
(Limit, InUse, MaxInUse, NumAllocs, NumFrees, ActiveAllocs, MaxAllocSize,
TotalSystemAllocs, TotalSystemFrees, TotalActiveAllocs: the slabs libhpu's
cache took from the driver, gave back and holds) plus Reserved.
"""
from .. import _C
from ._device import _index


def memory_stats(device=None):
    return dict(_C._memory_stats(_index(device)))


def memory_allocated(device=None):
    return memory_stats(device)["InUse"]


def max_memory_allocated(device=None):
    return memory_stats(device)["MaxInUse"]


def memory_reserved(device=None):
    return memory_stats(device)["Reserved"]


def reset_peak_memory_stats(device=None):
    _C._reset_peak_memory_stats(_index(device))


def empty_cache(device=None):
    """Gives the device memory no storage holds back to the driver."""
    _C._empty_cache(_index(device))
