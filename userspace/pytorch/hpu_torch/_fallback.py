# SPDX-License-Identifier: MIT
"""The CPU fallback's counts, and the seeds' frequency table at exit.

With LOG_LEVEL_PT_FALLBACK at 1 or below, the extension logs each fallback
("CPU fallback digamma : self=HPUBFloat16Type") and, at exit, this module
prints how often each op fell back:

    Frequency of op and op name that were executed on CPU:
    1 aten::digamma
"""
import atexit
import os
import sys

from . import _C


def fallback_counts():
    """How many times each op ran on the CPU in this process: {"aten::digamma": 1}."""
    return dict(_C._fallback_counts())


def _logging():
    try:
        return int(os.environ.get("LOG_LEVEL_PT_FALLBACK", "")) <= 1
    except ValueError:
        return False


@atexit.register
def _frequency_table():
    counts = fallback_counts()
    if not counts or not _logging():
        return
    lines = ["Frequency of op and op name that were executed on CPU:"]
    lines += [f"{n} {op}" for op, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    print("\n".join(lines), file=sys.stderr)
