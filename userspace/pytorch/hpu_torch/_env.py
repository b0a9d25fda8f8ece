# SPDX-License-Identifier: MIT
"""Gaudi's environment variables onto libhpu's, set before any device opens (libhpu reads
them then):

    PT_HPU_RECIPE_CACHE_CONFIG=dir,clear,max_mb  ->  HPU_RECIPE_CACHE_CONFIG (the recipe
        disk cache: recipes kept in files in dir, which processes share; clear=true empties
        it at each device open; the least recently used files go beyond 0.99 x max_mb MiB)
    PT_HPU_FALLBACK_STRICT=1  ->  HPU_FALLBACK_STRICT=1 (libhpu's own fallbacks fail too;
        the bridge's CPU fallback reads PT_HPU_FALLBACK_STRICT at each fallback)

A libhpu variable set explicitly wins.  PT_HPU_METRICS_FILE is the bridge's
(hpu_torch.hpu.metrics writes it at exit).
"""
import os

_NAMES = {"PT_HPU_RECIPE_CACHE_CONFIG": "HPU_RECIPE_CACHE_CONFIG",
          "PT_HPU_FALLBACK_STRICT": "HPU_FALLBACK_STRICT"}

for gaudi, libhpu in _NAMES.items():
    if gaudi in os.environ:
        os.environ.setdefault(libhpu, os.environ[gaudi])
