# SPDX-License-Identifier: MIT
"""Fused optimizers (Gaudi's ``hpex.optimizers``): one step of every parameter of a group in
launches back to back (one recipe in lazy mode), the learning rate and the step count as
device scalars, so that an LR scheduler recompiles nothing and a captured HPU graph follows it."""
from ._fused import FusedAdadelta, FusedAdamW, FusedLamb, FusedSGD

__all__ = ["FusedAdadelta", "FusedAdamW", "FusedLamb", "FusedSGD"]
