# SPDX-License-Identifier: MIT
"""torch.save / torch.load of hpu tensors, as of CUDA's.

PyTorch 1.13 pickles an hpu tensor as a numpy array of its values rebuilt with
.to("hpu:N"): map_location cannot move it and views of one storage come back
apart; and its Python storage functions (copy_, set_) refuse hpu storages.  So:

- an hpu tensor pickles as a CPU tensor does (torch._utils._rebuild_tensor_v2
  over a storage), its storage a host copy of the hpu one, made once per hpu
  storage while a save holds it (views share it), which the tagger names
  "hpu:N" for torch.save (registered before the CPU's);
- torch.load hands a storage tagged "hpu..." (or remapped there by
  map_location) to the deserializer, which copies its bytes to that device;
  _rebuild_tensor makes the tensors over those bytes (a dtype view and
  as_strided of the device's uint8 tensor: no Python storage call).

A file from hpu loads with map_location="cpu" where hpu_torch is absent.
"""
import weakref
from collections import OrderedDict

import torch
import torch._utils
import torch.serialization
from torch._namedtensor_internals import check_serializing_named_tensor

from .hpu._device import _index

# Host copies by the address of their hpu storage.  Each holds its hpu storage, so the
# address cannot name another storage while a copy lives.
_host_copies = weakref.WeakValueDictionary()


def _host_copy(tensor):
    """The storage of an hpu tensor, copied to the host and tagged with its device."""
    storage = tensor._storage()
    host = _host_copies.get(storage.data_ptr()) if storage.data_ptr() else None
    if host is None or host.nbytes() != storage.nbytes():
        whole = tensor.detach().as_strided((storage.nbytes() // tensor.element_size(),), (1,), 0)
        host = whole.cpu()._storage()
        host._hpu_location = str(tensor.device)
        host._hpu_source = storage
        if storage.data_ptr():
            _host_copies[storage.data_ptr()] = host
    return host


_reduce_ex_internal = torch.Tensor._reduce_ex_internal


def _reduce(self, proto):
    if self.device.type != "hpu":
        return _reduce_ex_internal(self, proto)
    check_serializing_named_tensor(self)
    torch.utils.hooks.warn_if_has_hooks(self)
    storage = torch.storage.TypedStorage(wrap_storage=_host_copy(self), dtype=self.dtype)
    # Hooks are not saved (PyTorch's Note [Don't serialize hooks]).
    return (torch._utils._rebuild_tensor_v2,
            (storage, self.storage_offset(), tuple(self.size()), self.stride(),
             self.requires_grad, OrderedDict()))


def _tag(storage):
    return getattr(storage, "_hpu_location", None)


def _deserialize(obj, location):
    """A host storage read from a file, onto the hpu device location names."""
    if not location.startswith("hpu"):
        return None
    device = torch.device("hpu", _index(location))
    if device.index >= torch.hpu.device_count():
        raise RuntimeError(f"hpu: the file holds tensors of {device}, and this process has "
                           f"{torch.hpu.device_count()} hpu device(s): load it with "
                           "map_location naming one it has")
    on_device = torch.tensor([], dtype=torch.uint8).set_(obj).to(device)
    storage = on_device._storage()
    storage._hpu_bytes = on_device
    return storage


_rebuild_tensor = torch._utils._rebuild_tensor


def _rebuild(storage, storage_offset, size, stride):
    untyped = storage._storage
    if untyped.device.type != "hpu":
        return _rebuild_tensor(storage, storage_offset, size, stride)
    if not hasattr(untyped, "_hpu_bytes"):
        raise RuntimeError("hpu: a storage that hpu_torch's deserializer did not load")
    return untyped._hpu_bytes.view(storage.dtype).as_strided(size, stride, storage_offset)


torch.serialization.register_package(9, _tag, _deserialize)
torch.Tensor._reduce_ex_internal = _reduce
torch._utils._rebuild_tensor = _rebuild
