# SPDX-License-Identifier: MIT
"""The names of Gaudi's PyTorch package, habana_frameworks.torch, onto hpu_torch's, for this
process only (hpu_torch.run installs them; nothing is installed under that name):

    habana_frameworks.torch          hpu_torch (import habana_frameworks.torch as ht; ht.hpu)
    habana_frameworks.torch.core     hpu_torch.core, with .hpu (htcore.hpu.HPUGraph())
    habana_frameworks.torch.hpu      hpu_torch.hpu (and .metrics, and any other submodule
                                     hpu_torch has under the same name)

A name hpu_torch has no module for (hpex, say) fails to import as any missing module does.
"""
import importlib
import importlib.abc
import importlib.util
import sys
import types

_PREFIX = "habana_frameworks"
_TORCH = _PREFIX + ".torch"


class _Proxy(types.ModuleType):
    """A module whose missing attributes are another module's."""

    def __init__(self, name, target, **extra):
        super().__init__(name)
        self.__path__ = []
        self._target = target
        self.__dict__.update(extra)

    def __getattr__(self, attr):
        if self._target is None:
            raise AttributeError(attr)
        return getattr(importlib.import_module(self._target), attr)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name != _PREFIX and not name.startswith(_PREFIX + "."):
            return None
        if name.startswith(_TORCH + ".") and name != _TORCH + ".core":
            ours = "hpu_torch" + name[len(_TORCH):]
            if importlib.util.find_spec(ours) is None:
                return None
        return importlib.util.spec_from_loader(name, self, is_package=True)

    def create_module(self, spec):
        name = spec.name
        if name == _PREFIX:
            return _Proxy(name, None)
        if name == _TORCH:
            return _Proxy(name, "hpu_torch")
        if name == _TORCH + ".core":
            return _Proxy(name, "hpu_torch.core", hpu=importlib.import_module("hpu_torch.hpu"))
        return importlib.import_module("hpu_torch" + name[len(_TORCH):])

    def exec_module(self, module):
        pass


def install():
    """Makes habana_frameworks.torch importable in this process (once)."""
    import hpu_torch  # noqa: F401  (registers torch.hpu)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
