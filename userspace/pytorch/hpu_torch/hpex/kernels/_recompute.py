# SPDX-License-Identifier: MIT
"""FusedSDPA's operation mode when its recompute_mode argument is None: recompute (the
default) or not. ``enable_recompute_sdp(flag)`` sets it for the process until set again;
``sdp_kernel(enable_recompute=flag)`` within a ``with`` block, restoring it on exit.
No torch import: ``torch.hpu`` re-exports these."""
import contextlib

_recompute = True


def enable_recompute_sdp(enable):
    """Globally enable (True) or disable (False) FusedSDPA's recompute mode."""
    global _recompute
    _recompute = bool(enable)


def recompute_sdp_enabled():
    """Whether FusedSDPA's recompute mode is enabled."""
    return _recompute


@contextlib.contextmanager
def sdp_kernel(enable_recompute=True):
    """Recompute mode on (enable_recompute=True) or off within the context."""
    global _recompute
    saved = _recompute
    _recompute = bool(enable_recompute)
    try:
        yield
    finally:
        _recompute = saved
