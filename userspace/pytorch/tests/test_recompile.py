# SPDX-License-Identifier: MIT
"""What compiles, read from what the examples print: the growing batch compiles one graph per
new batch size and none when a size repeats (and warns past HPU_RECOMPILE_WARN); the dynamic
control flow's graphs are captured once and each path's steps stop compiling; the dynamic op's
ModuleCacher captures one graph per size; and a second process with the disk cache compiles
nothing but the recipe whose file was damaged.

The examples run as `python3 -m hpu_torch.run` runs them, in this process (importing torch
takes 20-30 s in the test guest), but for the disk cache's two runs, which need processes of
their own: libhpu reads the cache's configuration when a device opens.
"""
import ast
import contextlib
import io
import json
import os
import subprocess
import sys
from collections import OrderedDict

import pytest

import hpu_torch
from hpu_torch import core, run
from hpu_torch.hpu.metrics import RecompileWarning, metric_global

EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "examples"))


def run_example(name, *args):
    """examples/name run with args in this process, in lazy mode; the lines it printed."""
    out = io.StringIO()
    was, argv, path = core.is_lazy(), sys.argv, list(sys.path)
    core._set_lazy(True)
    try:
        with contextlib.redirect_stdout(out):
            assert run.main([os.path.join(EXAMPLES, name), *map(str, args)]) == 0
    finally:
        core._set_lazy(was)
        sys.argv, sys.path[:] = argv, path
    return out.getvalue().splitlines()


def printed(line, name):
    """The stats a line `name:  [[stat, value], ...]` (or `name:  {...}`) printed."""
    assert line.startswith(name + ": "), (name, line)
    return dict(ast.literal_eval(line[len(name) + 2:].strip()))


def find(lines, prefix):
    """The line printed that starts with prefix."""
    return next(l for l in lines if l.startswith(prefix))


def compiled():
    return dict(metric_global("graph_compilation").stats())["TotalNumber"]


def deltas(counts, start):
    """Per step, what it added to a running count that was start before the first."""
    return [b - a for a, b in zip([start] + counts[:-1], counts)]


def test_growing_batch_compiles_per_new_size(monkeypatch):
    """Batches of 1, 2, ... 5 samples, then 5 again: a step of a new size compiles one graph
    (the forward and backward's; the optimizer's, of fixed shapes, only in the first two
    steps: without, then with its state and gradients to zero), one of a size seen compiles
    none; past HPU_RECOMPILE_WARN recipes of one graph, a RecompileWarning."""
    monkeypatch.setenv("HPU_RECOMPILE_WARN", "3")
    start = compiled()
    with pytest.warns(RecompileWarning):
        lines = run_example("growing_batch.py", "--steps", 8, "--batch-size", 6,
                            "--split", "test")
    sizes = [int(l.split()[3]) for l in lines if l.startswith("step ")]
    counts = [printed(l, "graph_compilation")["TotalNumber"]
              for l in lines if l.startswith("graph_compilation")]
    assert sizes == [1, 2, 3, 4, 5, 5, 5, 5]
    per_step = deltas(counts, start)
    assert min(per_step[:2]) >= 1, per_step
    assert per_step[2:] == [1, 1, 1, 0, 0, 0], (sizes, per_step)
    assert printed(lines[-1], "graph_compilation")["RecompileWarnings"] >= 1


def test_dynamic_control_flow_compiles_each_path_once():
    """3 graphed modules: 6 captures, 4 replays a step (module1 and the path's module, forward
    and backward); a path's first step compiles its lazy graphs, its second its optimizer's
    steady state, and from its third on nothing compiles.  Nothing falls back."""
    steps = 6
    start, graphs = compiled(), dict(metric_global("hpu_graph").stats())
    fallbacks = hpu_torch.fallback_counts()
    lines = run_example("dynamic_control_flow.py", "--steps", steps)
    paths = [l for l in lines if l.startswith("Path ")]
    counts = [printed(l, "graph_compilation")["TotalNumber"]
              for l in lines if l.startswith("graph_compilation")]
    losses = [l for l in lines if l.startswith("tensor(")]
    assert len(paths) == len(counts) == len(losses) == steps
    assert set(paths) == {"Path 1", "Path 2"}, paths  # seed 0 takes both
    per_step = deltas(counts, start)
    for i, (path, n) in enumerate(zip(paths, per_step)):
        seen = paths[:i].count(path)
        if seen == 0:
            assert n > 0, (paths, per_step)
        elif seen >= 2:
            assert n == 0, (paths, per_step)
    assert sum(1 for i, p in enumerate(paths) if paths[:i].count(p) >= 2) > 0, paths
    after = printed(lines[-1], "hpu_graph")
    assert after["Captures"] - graphs["Captures"] == 6
    assert after["Replays"] - graphs["Replays"] == 4 * steps
    assert hpu_torch.fallback_counts() == fallbacks


def lru_misses(keys, capacity):
    """(misses, evictions) of an LRU cache of capacity looked up with keys in turn."""
    cache, misses, evictions = OrderedDict(), 0, 0
    for k in keys:
        if k in cache:
            cache.move_to_end(k)
            continue
        misses += 1
        cache[k] = True
        if len(cache) > capacity:
            cache.popitem(last=False)
            evictions += 1
    return misses, evictions


def test_dynamic_ops_captures_per_size():
    """module1 (one input shape) captures one graph; module2, after the dynamic op, one per
    size it is given, as an LRU cache of 10 would miss; the losses are numbers."""
    steps = 6
    lines = run_example("dynamic_ops.py", "--steps", steps)
    losses = [float(l[len("tensor("):].split(",")[0]) for l in lines if l.startswith("tensor(")]
    sizes = ast.literal_eval(find(lines, "sizes after").split(":", 1)[1].strip())
    assert len(losses) == len(sizes) == steps
    assert all(0 <= loss < float("inf") for loss in losses), losses
    assert all(0 <= n <= 15 for n in sizes), sizes
    module1 = printed(find(lines, "module1"), "module1")
    module2 = printed(find(lines, "module2"), "module2")
    assert module1 == {"calls": steps, "captures": 1, "evictions": 0}
    captures, evictions = lru_misses(sizes, 10)
    assert module2 == {"calls": steps, "captures": captures, "evictions": evictions}, sizes


def test_disk_cache_second_process_compiles_nothing(tmp_path):
    """The growing batch in a process that fills the disk cache (clear=true), then, one of its
    files damaged, in a second (clear=false): the second loads every recipe from disk but the
    damaged one, which it ignores, compiles and writes again; it runs alike and compiles
    nothing else."""
    cache = tmp_path / "cache"
    example = [sys.executable, "-m", "hpu_torch.run", os.path.join(EXAMPLES, "growing_batch.py"),
               "--steps", "4", "--batch-size", "4", "--split", "test"]

    def run_once(n, clear):
        env = dict(os.environ, PT_HPU_RECIPE_CACHE_CONFIG=f"{cache},{clear},64",
                   PT_HPU_METRICS_FILE=str(tmp_path / f"metrics{n}.json"),
                   PT_HPU_LAZY_MODE="1", HPU_RECIPE_CACHE_LOG="1")
        env.pop("HPU_RECIPE_CACHE_CONFIG", None)
        # Not from userspace/pytorch, whose hpu_torch/ would shadow the built package.
        p = subprocess.run(example, cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=600)
        assert p.returncode == 0, p.stderr
        with open(tmp_path / f"metrics{n}.json") as f:
            return p, json.load(f)

    first, m1 = run_once(1, "true")
    files = sorted(f for f in os.listdir(cache) if f.endswith(".recipe"))
    compiled1 = m1["graph_compilation"]["TotalNumber"]
    # Sizes 1, 2, 3, 3: one recipe a graph, each written to disk.
    assert compiled1 >= 4 and len(files) == compiled1, (m1, files)
    assert m1["recipe_cache_disk"]["Writes"] == compiled1

    damaged = cache / files[0]
    good = damaged.read_bytes()
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0xff
    damaged.write_bytes(bytes(bad))

    second, m2 = run_once(2, "false")
    disk = m2["recipe_cache_disk"]
    assert m2["graph_compilation"]["TotalNumber"] == 1, m2
    assert (disk["Hits"], disk["Misses"], disk["Ignored"], disk["Writes"]) == \
        (compiled1 - 1, 1, 1, 1), disk
    assert files[0] in second.stderr and "ignored" in second.stderr, second.stderr
    assert damaged.read_bytes() == good
    # The same training: the steps' losses are the first run's.
    losses = lambda p: [l for l in p.stdout.splitlines() if l.startswith("step ")]  # noqa: E731
    assert losses(second) == losses(first)
