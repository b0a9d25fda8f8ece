# SPDX-License-Identifier: MIT
"""python3 -m hpu_torch.run SCRIPT [ARGS...]: runs a script written for Intel Gaudi on hpu.

The script sees hpu_torch under Gaudi's names (habana_frameworks.torch.core,
.hpu, .hpu.metrics: hpu_torch/_habana.py), torch.hpu registered, sys.argv as
[SCRIPT, ARGS...] and its own directory first on sys.path, as `python3 SCRIPT`
would give it; its PT_HPU_* and LOG_LEVEL_PT_FALLBACK variables are read as
Gaudi's are.  Nothing is installed: the names exist in this process only.
"""
import os
import runpy
import sys

from ._habana import install


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    install()
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
