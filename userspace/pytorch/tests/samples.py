# SPDX-License-Identifier: MIT
"""Host values the suite's tests start from (test_device.py, test_copies.py)."""
import torch


def sample(shape, dtype, seed=0):
    """Values of dtype on the host, every one exact in every dtype a test casts to."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_complex:
        return torch.complex(torch.randn(shape, generator=g),
                             torch.randn(shape, generator=g)).to(dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    lo = 0 if dtype == torch.uint8 else -100
    return torch.randint(lo, 100, shape, generator=g).to(dtype)
