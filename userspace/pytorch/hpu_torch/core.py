# SPDX-License-Identifier: MIT
"""Lazy mode (habana_frameworks.torch.core's names).

In lazy mode (PT_HPU_LAZY_MODE=1, the default; 0 is eager) the ops enqueued on
an hpu device are recorded into a graph, compiled (or found in libhpu's recipe
cache) and launched at mark_step(), or as soon as anything needs their results:
a host read (.item(), .cpu(), printing), a copy, a synchronize, a CPU fallback.
PT_HPU_MAX_COMPOUND_OP_SIZE caps the ops of one graph.
"""
from . import _C
from .hpu import metrics
from .hpu._device import _index


def mark_step(device_str="", sync=False):
    """Launches what the device's streams recorded; with sync, waits for it too."""
    index = _index(device_str or None)
    _C._mark_step(index)
    metrics.check_recompiles()
    if sync:
        _C._synchronize(index)


def is_lazy():
    """Whether the streams record (lazy mode) or run each op as it comes (eager)."""
    return _C._lazy_mode()


def _set_lazy(lazy):
    """Switches every stream, those to come too (going eager launches what was recorded)."""
    _C._set_lazy_mode(bool(lazy))


__all__ = ["mark_step", "is_lazy"]
