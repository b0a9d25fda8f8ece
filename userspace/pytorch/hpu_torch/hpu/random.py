# SPDX-License-Identifier: MIT
"""The devices' generators: dropout draws on each device's own (Philox, its
state in device memory, csrc/ops_nn.cpp).  A seed takes effect at the device's
next dropout, capture or graph replay (a replay draws from the state as it is
then, as CUDA graphs do); seeding a device that captures is refused.
torch.manual_seed() seeds them too once hpu_torch is imported."""
import torch

from .. import _C
from ._device import _index


def manual_seed(seed, device=None):
    """Seeds the generator of device (the current one by default)."""
    _C._manual_seed(_index(device), int(seed) & 0xFFFF_FFFF_FFFF_FFFF)


def manual_seed_all(seed):
    for index in range(_C._device_count()):
        manual_seed(seed, index)


_torch_manual_seed = torch.random.manual_seed


def _manual_seed_everywhere(seed):
    generator = _torch_manual_seed(seed)
    manual_seed_all(seed)
    return generator


_manual_seed_everywhere.__doc__ = _torch_manual_seed.__doc__
torch.manual_seed = torch.random.manual_seed = _manual_seed_everywhere
