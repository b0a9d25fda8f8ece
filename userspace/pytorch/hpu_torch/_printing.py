# SPDX-License-Identifier: MIT
"""Printing an hpu tensor formats a host copy of its elements.

PyTorch formats a tensor's elements with tensor ops on its device (min, max,
masked_select, ...) unless the device is one it copies to the host first; hpu
is not in its list, so its formatter is wrapped to do that for hpu: a print is
one copy, not a string of ops through the CPU fallback.  The rest of the text
(device='hpu:0', dtype, grad_fn) is PyTorch's own.
"""
import torch._tensor_str as _tensor_str

_format = _tensor_str._tensor_str


def _hpu_tensor_str(self, indent):
    if self.device.type == "hpu":
        self = self.cpu()
    return _format(self, indent)


_tensor_str._tensor_str = _hpu_tensor_str
