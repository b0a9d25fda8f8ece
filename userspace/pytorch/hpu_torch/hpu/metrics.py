# SPDX-License-Identifier: MIT
"""Metrics, as Gaudi's habana_frameworks.torch.hpu.metrics names them.

metric_global("graph_compilation").stats() gives a metric's counters as
[name, value] pairs (TotalNumber, TotalTime, AvgTime: host nanoseconds), read
from libhpu; its other metrics are graph_launch, lazy_mode, hpu_graph,
recipe_cache, recipe_cache_disk and memory (hpu/hpu_graph.h says what each
counts).  cpu_fallback counts the ops that ran on the CPU: the bridge's
fallbacks ("aten::digamma") and libhpu's own, with their TotalNumber.
metric_localcontext(name) is a context whose stats() count only what happened
inside it.  With PT_HPU_METRICS_FILE set, every metric is written there as JSON
at exit ({"graph_compilation": {"TotalNumber": 3, ...}, ...}).

A graph site that compiles more than HPU_RECOMPILE_WARN recipes (default 8)
gets libhpu's warning on stderr and, from the next HPU graph capture or metric
read, a Python RecompileWarning.
"""
import atexit
import json
import os
import warnings

from .. import _C
from .._fallback import fallback_counts


class RecompileWarning(UserWarning):
    """A graph recompiled for many shapes (dynamic shapes): see the metric graph_compilation."""


_FALLBACK = "cpu_fallback"
_warned = 0


def _read(name):
    if name != _FALLBACK:
        return dict(_C._metric_global(name))
    # The bridge's fallbacks by aten name, then libhpu's own by its op names.
    ops = fallback_counts()
    native = dict(_C._metric_global(name))
    total = sum(ops.values()) + native.pop("Total", 0)
    ops.update({op: n for op, n in native.items() if n})
    return {"TotalNumber": total, **ops}


def check_recompiles():
    """Warns (RecompileWarning) once per new warning libhpu gave about recompilations."""
    global _warned
    n = _C._metric_value("graph_compilation", "RecompileWarnings")
    if n > _warned:
        _warned = n
        warnings.warn(f"hpu: a graph has been recompiled for more shapes than "
                      f"HPU_RECOMPILE_WARN allows ({n} site(s) so far; libhpu's stderr names "
                      f"them): pad or bucket its dynamic dims", RecompileWarning, stacklevel=3)


class Metric:
    """A metric by name; stats() reads its counters now."""

    def __init__(self, name):
        self.name = name
        _read(name)  # an unknown name fails here

    def stats(self):
        check_recompiles()
        return [[k, v] for k, v in _read(self.name).items()]

    def __repr__(self):
        return f"Metric({self.name!r}: {self.stats()})"


def metric_global(name):
    """The process's metric name, counted since it started."""
    return Metric(name)


class metric_localcontext(Metric):
    """with metric_localcontext("graph_compilation") as m: ... m.stats() counts what happened
    inside (and since, until the context ends)."""

    def __enter__(self):
        self.start = _read(self.name)
        self.end = None
        return self

    def __exit__(self, *exc):
        self.end = _read(self.name)

    def stats(self):
        check_recompiles()
        now = self.end if self.end is not None else _read(self.name)
        d = {k: v - self.start.get(k, 0) for k, v in now.items()}
        if "AvgTime" in d:
            d["AvgTime"] = d["TotalTime"] // d["TotalNumber"] if d.get("TotalNumber") else 0
        return [[k, v] for k, v in d.items()]


def metrics_dump(path):
    """Writes every metric to path as one JSON object of objects."""
    # libhpu's dump names every metric it has; the bridge's fallbacks join its own.
    _C._metrics_dump_json(path)
    with open(path) as f:
        everything = json.load(f)
    everything[_FALLBACK] = _read(_FALLBACK)
    with open(path, "w") as f:
        json.dump(everything, f, indent=2)
        f.write("\n")


@atexit.register
def _dump_at_exit():
    path = os.environ.get("PT_HPU_METRICS_FILE")
    if path:
        metrics_dump(path)


__all__ = ["metric_global", "metric_localcontext", "metrics_dump", "RecompileWarning"]
