# SPDX-License-Identifier: MIT
"""HPU graphs: capture a stream's work once, replay it many times (torch.cuda's graph API).

HPUGraph is libhpu's graph (csrc/graph.cpp): the ops enqueued on the current
stream between capture_begin() and capture_end() are recorded, not run, then
compiled once; replay() runs them all as one submission.  The tensors a capture
used keep their memory: those still held afterwards are the graph's static
inputs and outputs (copy new data into an input, replay, read an output), those
freed during the capture are intermediates in the graph's own workspace.  A
capture takes device ops only: a host read, a copy from the host or a CPU
fallback during it fails, naming what was refused.  One capture per device at a
time; a backward() inside it is captured (its kernels run on the autograd
engine's thread, which follows the capturing stream).

On HPUGraph: graph(g), the capture as a context (on a side stream, as
torch.cuda.graph); make_graphed_callables(), a module or function as separate
forward and backward graphs behind autograd; ModuleCacher, a module whose calls
each replay the graph of their input signature (tensors' shapes and dtypes,
non-tensor and keyword arguments, training mode), captured on first use, at
most max_graphs kept and, with a budget, at most that much device memory, least
recently used dropped first (libhpu's hpu_module_cacher policy and figures);
wrap_in_hpu_graph(), the same for inference.
"""
import collections
import os

import torch

from .. import _C
from . import metrics
from ._device import _index
from .streams import Stream, current_stream, stream


class HPUGraph:
    """A graph of the current device's work, captured on the current stream."""

    def __init__(self):
        self._graph = _C._Graph()

    def capture_begin(self):
        """Records, without running them, the ops enqueued on the current stream from now on."""
        s = current_stream()
        self._graph.capture_begin(s.device_index, s.stream_id)

    def capture_end(self):
        """Ends the capture and compiles it."""
        self._graph.capture_end()
        metrics.check_recompiles()

    def replay(self):
        """Enqueues the captured ops on the current stream of the graph's device."""
        self._graph.replay()

    def reset(self):
        """Drops the capture (ending it if it is going): the graph may capture again."""
        self._graph.reset()

    def info(self):
        """num_ops, num_tensors, num_engines, workspace_bytes, device_bytes, replays."""
        return dict(self._graph.info())


class graph:
    """Context manager: the work inside is captured into hpu_graph, on stream (default: a
    side stream), as torch.cuda.graph.  An exception inside ends the capture and drops it."""

    def __init__(self, hpu_graph, pool=None, stream=None):
        self.hpu_graph = hpu_graph
        self.stream = stream

    def __enter__(self):
        # What the device has enqueued (static inputs' data) comes first.
        _C._synchronize(_index())
        s = Stream() if self.stream is None else self.stream
        self.ctx = stream(s)
        self.ctx.__enter__()
        try:
            self.hpu_graph.capture_begin()
        except BaseException:
            self.ctx.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, *exc):
        try:
            if exc_type is None:
                self.hpu_graph.capture_end()
            else:
                self.hpu_graph.reset()
        finally:
            self.ctx.__exit__(None, None, None)


def _tensors(args):
    return tuple(a for a in args if isinstance(a, torch.Tensor))


class _Graphed:
    """One callable with static inputs, its forward graph and, if anything needs a gradient,
    its backward graph (torch.cuda.make_graphed_callables' way)."""

    def __init__(self, fn, sample_args, params, warmup=3):
        self.static_inputs = tuple(a.detach().clone().requires_grad_(a.requires_grad)
                                   for a in sample_args)
        self.params = tuple(params)
        surface = self.static_inputs + self.params
        self.grad_surface = tuple(t for t in surface if t.requires_grad)
        self.needs_grad = torch.is_grad_enabled() and bool(self.grad_surface)

        # Warm-up, on a side stream as the capture will be, so that every lazily made thing
        # (an optimizer's state, a cached view) exists before the capture.
        s = Stream()
        s.wait_stream(current_stream())
        with stream(s):
            for _ in range(warmup):
                outs = _as_tuple(fn(*self.static_inputs))
                if self.needs_grad:
                    torch.autograd.grad(_needing_grad(outs),
                                        self.grad_surface,
                                        [torch.ones_like(o) for o in _needing_grad(outs)],
                                        allow_unused=True)
            del outs
        current_stream().wait_stream(s)

        # What the forward graph hands the backward one (autograd's saved tensors) is held by
        # the graphs alone once the capture's autograd graph goes: counted in self.bytes.
        saved = []

        def pack(t):
            saved.append(t.detach())
            return saved[-1]

        self.fwd = HPUGraph()
        with graph(self.fwd), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            outs = fn(*self.static_inputs)
        self.single = not isinstance(outs, tuple)
        outs = _as_tuple(outs)
        self.static_outputs = outs
        self.static_grad_outputs = ()
        self.static_grad_inputs = ()
        if not self.needs_grad:
            self.static_outputs = tuple(o.detach() for o in outs)
            self.bytes = self._bytes(saved)
            return
        self.static_grad_outputs = tuple(torch.empty_like(o) if o.requires_grad else None
                                         for o in outs)
        self.bwd = HPUGraph()
        with graph(self.bwd):
            grads = torch.autograd.grad(_needing_grad(outs), self.grad_surface,
                                        [g for g in self.static_grad_outputs if g is not None],
                                        allow_unused=True)
        # A gradient per input and parameter: None where none flows.
        grads = iter(grads)
        self.static_grad_inputs = tuple(next(grads) if t.requires_grad else None
                                        for t in surface)
        self.static_outputs = tuple(o.detach() for o in outs)
        self.bytes = self._bytes(saved)

    def _bytes(self, saved):
        """The device memory the graphs pin, counted as libhpu's module cacher counts a graph's:
        the storages of the static inputs and outputs (here also the static gradients and
        the saved tensors), each once, and each graph's device_bytes (command buffers and
        workspace).  The parameters' storages are the module's, shared by all its graphs."""
        shared = {t.storage().data_ptr() for t in self.params}
        held = {}
        for t in (self.static_inputs + self.static_outputs + self.static_grad_outputs +
                  self.static_grad_inputs + tuple(saved)):
            if t is not None and t.device.type == "hpu":
                held.setdefault(t.storage().data_ptr(), t.storage().nbytes())
        graphs = (self.fwd, self.bwd) if self.needs_grad else (self.fwd,)
        return (sum(n for ptr, n in held.items() if ptr not in shared) +
                sum(g.info()["device_bytes"] for g in graphs))

    def check(self, inputs):
        if len(inputs) != len(self.static_inputs):
            raise TypeError(f"hpu: a graphed callable of {len(self.static_inputs)} tensor "
                            f"inputs called with {len(inputs)}")
        for i, (a, s) in enumerate(zip(inputs, self.static_inputs)):
            if a.shape != s.shape or a.dtype != s.dtype or a.device != s.device:
                raise ValueError(f"hpu: input {i} of a graphed callable is {a.dtype} "
                                 f"{tuple(a.shape)} on {a.device}; its static input is "
                                 f"{s.dtype} {tuple(s.shape)} on {s.device}")

    def forward(self, inputs):
        self.check(inputs)
        for a, s in zip(inputs, self.static_inputs):
            if a.data_ptr() != s.data_ptr():
                s.detach().copy_(a.detach())
        self.fwd.replay()
        return self.static_outputs

    def backward(self, grads):
        for g, s in zip(grads, self.static_grad_outputs):
            if s is not None:
                if g is None:
                    s.zero_()
                elif g.data_ptr() != s.data_ptr():
                    s.copy_(g)
        self.bwd.replay()
        # Copies: autograd may keep a gradient as a parameter's .grad, which the next replay
        # would overwrite (and accumulating into it would add it to itself).
        return tuple(g.clone() if g is not None else None for g in self.static_grad_inputs)


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _needing_grad(outs):
    return tuple(o for o in outs if o.requires_grad)


class _Replay(torch.autograd.Function):
    """A graphed callable's replays behind autograd.  One class for all: a class made per
    graph would be a reference cycle holding the graphs until Python's collector ran, where
    here they go with the last reference (ModuleCacher's evictions give their memory back)."""

    @staticmethod
    def forward(ctx, graphed, *inputs):
        ctx.graphed = graphed
        outs = graphed.forward(inputs[:len(graphed.static_inputs)])
        return tuple(o.detach() for o in outs)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *grads):
        return (None,) + ctx.graphed.backward(grads)


def _graphed(fn, sample_args, params):
    """fn over tensors as a graphed callable: it returns what fn returned, a tensor or a tuple.
    Its bytes attribute is the device memory its graphs pin (_Graphed.bytes)."""
    g = _Graphed(fn, sample_args, params)
    if g.needs_grad:
        run = lambda inputs: _Replay.apply(g, *inputs, *g.params)  # noqa: E731
    else:
        run = g.forward

    def call(*inputs):
        outs = run(inputs)
        return outs[0] if g.single else outs
    call.bytes = g.bytes
    return call


def make_graphed_callables(callables, sample_args):
    """callables (a module or function, or a tuple of them) as graphed callables: each a
    forward and a backward graph captured after 3 warm-up runs on sample_args (a tuple of
    tensors per callable), behind autograd.  Called with tensors of the sample's shapes and
    dtypes, a graphed callable copies them into its static inputs and replays; its outputs
    are the static outputs, overwritten by the next call."""
    single = not isinstance(callables, tuple)
    if single:
        callables, sample_args = (callables,), (sample_args,)
    out = []
    for fn, args in zip(callables, sample_args):
        args = _as_tuple(args)
        if not all(isinstance(a, torch.Tensor) for a in args):
            raise TypeError("hpu: make_graphed_callables takes tensor arguments only "
                            "(ModuleCacher takes others)")
        if isinstance(fn, torch.nn.Module):
            params = tuple(fn.parameters())
            fn.forward = _graphed(fn.forward, args, params)
            out.append(fn)
        else:
            out.append(_graphed(fn, args, ()))
    return out[0] if single else tuple(out)


def _signature(value):
    """What of an argument selects a graph: a tensor's shape, dtype, device and whether it
    needs a gradient; any other value itself (its repr if it cannot be hashed)."""
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), value.dtype, value.device, value.requires_grad)
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


_MAX_MB = "PT_HPU_MODULE_CACHER_MAX_MB"


def _budget_from_env():
    """PT_HPU_MODULE_CACHER_MAX_MB (MiB, >= 0; unset, empty or 0: no budget) in bytes."""
    value = os.environ.get(_MAX_MB, "").strip()
    try:
        mb = float(value) if value else 0.0
    except ValueError:
        mb = -1.0
    if not mb >= 0 or mb == float("inf"):
        raise ValueError(f"hpu: {_MAX_MB}={value!r}: a number of MiB >= 0 (0: no budget)")
    return int(mb * 2**20)


class ModuleCacher:
    """ModuleCacher(max_graphs=N, max_memory=B)(model=m, inplace=True): m's calls run as HPU
    graphs, one per input signature (tensor shapes and dtypes, non-tensor and keyword
    arguments, training and grad mode), captured the first time it is seen.  After each call
    the least recently used graphs are dropped while more than max_graphs are kept or, with
    a budget, while their device memory exceeds max_memory bytes (default: the environment's
    PT_HPU_MODULE_CACHER_MAX_MB, MiB; 0 or unset: no budget) - but never the graph of the
    call, so one larger than the budget is kept alone.  A graph's memory is what it pins
    (_Graphed.bytes: its static tensors and saved activations, command buffers and
    workspace), given back once nothing else holds the graph.  model.forward.stats counts
    calls, captures and evictions; model.forward.memory has graphs (kept) and bytes (their
    memory), as libhpu's cacher counts them.  Outputs are the graph's static outputs: the
    next call of the same signature overwrites them."""

    def __init__(self, max_graphs=10, max_memory=None):
        if max_graphs < 1:
            raise ValueError("hpu: ModuleCacher needs max_graphs >= 1")
        if max_memory is None:
            max_memory = _budget_from_env()
        if max_memory < 0:
            raise ValueError("hpu: ModuleCacher needs max_memory >= 0 (0: no budget)")
        self.max_graphs = max_graphs
        self.max_memory = int(max_memory)

    def __call__(self, model, inplace=True):
        if not inplace:
            import copy
            model = copy.deepcopy(model)
        cache = collections.OrderedDict()
        forward = model.forward
        max_graphs, max_memory = self.max_graphs, self.max_memory
        stats = dict.fromkeys(("calls", "captures", "evictions"), 0)
        memory = {"graphs": 0, "bytes": 0}

        def trim():
            while len(cache) > 1 and (len(cache) > max_graphs or
                                      (max_memory and memory["bytes"] > max_memory)):
                _, dropped = cache.popitem(last=False)
                stats["evictions"] += 1
                memory["bytes"] -= dropped.bytes
            memory["graphs"] = len(cache)

        def cached_forward(*args, **kwargs):
            names = tuple(sorted(kwargs))
            values = args + tuple(kwargs[k] for k in names)
            key = (len(args), names, model.training, torch.is_grad_enabled(),
                   tuple(_signature(v) for v in values))
            stats["calls"] += 1
            fn = cache.get(key)
            if fn is None:
                slots = [i for i, v in enumerate(values) if isinstance(v, torch.Tensor)]

                def bound(*tensors):
                    full = list(values)
                    for i, t in zip(slots, tensors):
                        full[i] = t
                    return forward(*full[:len(args)], **dict(zip(names, full[len(args):])))

                fn = _graphed(bound, tuple(values[i] for i in slots), tuple(model.parameters()))
                cache[key] = fn
                stats["captures"] += 1
                memory["bytes"] += fn.bytes
            else:
                cache.move_to_end(key)
            try:
                return fn(*_tensors(values))
            finally:
                trim()

        cached_forward.cache = cache
        cached_forward.stats = stats
        cached_forward.memory = memory
        model.forward = cached_forward
        return model


def wrap_in_hpu_graph(module, max_graphs=10, max_memory=None, **unused):
    """module with its calls replayed as HPU graphs, one per input signature (ModuleCacher)."""
    return ModuleCacher(max_graphs=max_graphs, max_memory=max_memory)(model=module, inplace=True)


__all__ = ["HPUGraph", "graph", "make_graphed_callables", "ModuleCacher", "wrap_in_hpu_graph"]
