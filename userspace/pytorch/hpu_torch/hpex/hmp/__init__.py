# SPDX-License-Identifier: MIT
"""Gaudi's ``habana_frameworks.torch.hpex.hmp``: mixed precision by casting the inputs of ops.

    from hpu_torch.hpex import hmp
    hmp.convert(opt_level="O1", bf16_file_path="", fp32_file_path="", isVerbose=False)
    with hmp.disable_casts():
        optimizer.step()

After convert(), every op the calling thread runs through PyTorch's Python API (torch.*,
torch.nn.functional.*, Tensor methods and operators) has its floating tensor inputs cast first,
by the seeds' rules:
  - an op in the bf16 list runs in bfloat16, one in the fp32 list in float32; F.linear and
    matmul, which PyTorch computes as addmm / mm / bmm / mv / dot, follow those ops' list;
  - O1: any other op runs in its first input's precision: with several floating tensor inputs,
    all are cast to the widest of their types; an in-place op's to its first input's (which it
    writes); O2: only GEMM and convolution ops run in bfloat16, every other in float32 (in-place
    ops still in their first input's);
  - a list file (bf16_file_path, fp32_file_path) replaces that list: one op name a line, blank
    lines and lines from '#' ignored.
The casts are ordinary tensor ops (`Tensor.to`), so on hpu they run on the device, are recorded
by lazy mode and HPU graphs as any op, and a step's casts are part of its recipe's key.  The ops
are seen through a torch function mode (torch.overrides.TorchFunctionMode) pushed on the calling
thread: other threads, and the autograd engine's backward, run without casts (a backward follows
its forward's dtypes).  A later convert() replaces the earlier settings.
"""
import contextlib
import re
import threading

import torch
from torch.overrides import TorchFunctionMode

__all__ = ["convert", "disable_casts"]

# The seeds' O1 lists; O2's bf16 set is every GEMM and convolution type of op.
O1_BF16 = ("addmm", "bmm", "conv1d", "conv2d", "conv3d", "dot", "mm", "mv")
O1_FP32 = ("batch_norm", "cross_entropy", "log_softmax", "softmax", "nll_loss", "topk")
O2_BF16 = O1_BF16 + ("addbmm", "addmv", "baddbmm", "conv_transpose1d", "conv_transpose2d",
                     "conv_transpose3d", "einsum", "linear", "matmul")

# Ops that are casts, copies of metadata or autograd entry points: never cast around.
_PASS = frozenset(("__get__", "__set__", "to", "type", "type_as", "view_as", "expand_as",
                   "reshape_as", "backward", "grad", "__setstate__", "__reduce_ex__",
                   "__deepcopy__", "new_tensor", "new_empty", "new_zeros", "new_ones",
                   "new_full", "copy_", "set_", "detach", "requires_grad_"))

# Functions PyTorch computes as the listed GEMMs (F.linear as addmm, or mm of a reshaped input;
# matmul as mm, bmm, mv or dot): unless a list names them, they follow those ops' list.
_COMPOSED = {"linear": ("addmm", "mm"), "matmul": ("mm", "bmm", "mv", "dot")}

# Buffers an op updates in place, by position and name: never cast (the update would go to a
# copy), whatever list names the op.
_UPDATED = {"batch_norm": ((1, 2), ("running_mean", "running_var"))}

# Floating types from narrowest to widest (the seeds' "widest precision type").
_WIDTH = {torch.bfloat16: 1, torch.float16: 2, torch.float32: 3, torch.float64: 4}
_BF16, _FP32 = "bf16", "fp32"


class _Config:
    def __init__(self, level, bf16, fp32, verbose):
        self.level = level
        self.bf16 = frozenset(bf16)
        self.fp32 = frozenset(fp32)
        self.verbose = verbose


_config = None
_local = threading.local()


def _read_list(path):
    """The op names of a list file; an unknown name is a ValueError (a typo would be ignored)."""
    names = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            name = line.split("#", 1)[0].strip()
            if not name:
                continue
            if not any(hasattr(m, name) for m in (torch, torch.nn.functional, torch.Tensor)):
                raise ValueError(f"hmp: {path}:{number}: {name!r} is not an op of torch, "
                                 "torch.nn.functional or Tensor")
            names.append(name)
    return names


# Tensor's operators: x @ w is matmul, x += y the in-place add_, 2 * x (__rmul__) mul.
_OPERATOR = re.compile(r"__(i|r)?(add|sub|mul|truediv|div|floordiv|mod|pow|and|or|xor|lshift|"
                       r"rshift|matmul)__")


def _name(func):
    """The op name the lists use."""
    name = getattr(func, "__name__", "")
    operator = _OPERATOR.fullmatch(name)
    if operator:
        return operator.group(2) + ("_" if operator.group(1) == "i" else "")
    return name


def _tensors(args, kwargs):
    """The floating tensors among the inputs (also inside lists and tuples: cat, stack)."""
    found = []
    for a in list(args) + [v for k, v in kwargs.items() if k != "out"]:
        if isinstance(a, torch.Tensor):
            if a.dtype in _WIDTH:
                found.append(a)
        elif isinstance(a, (list, tuple)):
            found.extend(t for t in a if isinstance(t, torch.Tensor) and t.dtype in _WIDTH)
    return found


def _cast(x, dtype):
    if isinstance(x, torch.Tensor):
        return x.to(dtype) if x.dtype in _WIDTH and x.dtype != dtype else x
    if isinstance(x, (list, tuple)) and any(isinstance(t, torch.Tensor) for t in x):
        return type(x)(_cast(t, dtype) for t in x)
    return x


def _decide(name, args, floats):
    """(dtype, reason) the op's floating inputs are cast to, or None to run it as called.  An
    op that writes its first input (in-place, x[i] = v) never has it cast (the write would go to
    a copy), nor an out= tensor."""
    cfg = _config
    if name.endswith("_") or name == "__setitem__":
        first = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if first is None or first.dtype not in _WIDTH:
            return None
        return first.dtype, "in-place: first input's"
    if name in cfg.bf16:
        return torch.bfloat16, "bf16 list"
    if name in cfg.fp32:
        return torch.float32, "fp32 list"
    if any(op in cfg.bf16 for op in _COMPOSED.get(name, ())):
        return torch.bfloat16, "bf16 list: computed as " + "/".join(_COMPOSED[name])
    if cfg.level == "O2":
        return torch.float32, "O2: not GEMM or convolution"
    return max((t.dtype for t in floats), key=_WIDTH.get), "widest input"


class _Mode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _config is None or getattr(_local, "disabled", 0):
            return func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if name in _PASS:
            return func(*args, **kwargs)
        name = _name(func)
        floats = _tensors(args, kwargs)
        if not floats:
            return func(*args, **kwargs)
        decision = _decide(name, args, floats)
        if decision is None or all(t.dtype == decision[0] for t in floats):
            return func(*args, **kwargs)
        dtype, reason = decision
        if _config.verbose:
            got = ",".join(str(t.dtype).replace("torch.", "") for t in floats)
            print(f"hmp: {name}: ({got}) -> {str(dtype).replace('torch.', '')} ({reason})",
                  flush=True)
        keep, keep_names = _UPDATED.get(name, ((), ()))
        args = tuple(a if i in keep else _cast(a, dtype) for i, a in enumerate(args))
        kwargs = {k: v if k == "out" or k in keep_names else _cast(v, dtype)
                  for k, v in kwargs.items()}
        return func(*args, **kwargs)


def convert(opt_level="O1", bf16_file_path="", fp32_file_path="", isVerbose=False):
    """Turns mixed precision on for the calling thread (see the module's doc).

    opt_level: "O1" (the seeds' lists) or "O2" (GEMM and convolution ops in bf16, the rest in
    fp32); bf16_file_path / fp32_file_path: files replacing the bf16 / fp32 list ("" keeps the
    level's); isVerbose: print each cast the rules make ("hmp: op: (input dtypes) -> dtype
    (rule)").  Errors: another opt_level is a ValueError, a missing file an OSError, a name that
    is no op or is in both lists a ValueError; nothing changes on an error.
    """
    global _config
    if opt_level not in ("O1", "O2"):
        raise ValueError(f"hmp.convert: opt_level must be 'O1' or 'O2', got {opt_level!r}")
    bf16 = _read_list(bf16_file_path) if bf16_file_path else (O1_BF16 if opt_level == "O1"
                                                              else O2_BF16)
    fp32 = _read_list(fp32_file_path) if fp32_file_path else (O1_FP32 if opt_level == "O1"
                                                              else ())
    both = sorted(set(bf16) & set(fp32))
    if both:
        raise ValueError(f"hmp.convert: {', '.join(both)} in both the bf16 and the fp32 list")
    _config = _Config(opt_level, bf16, fp32, bool(isVerbose))
    if not getattr(_local, "mode", None):
        _local.mode = _Mode()
        _local.mode.__enter__()


def _reset():
    """Back to the state before any convert() on the calling thread; for tests."""
    global _config
    _config = None
    mode = getattr(_local, "mode", None)
    if mode:
        _local.mode = None
        mode.__exit__(None, None, None)


@contextlib.contextmanager
def disable_casts():
    """Within it the calling thread's ops run as called, without hmp's casts (nestable)."""
    _local.disabled = getattr(_local, "disabled", 0) + 1
    try:
        yield
    finally:
        _local.disabled -= 1
