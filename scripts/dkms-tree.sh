#!/usr/bin/env bash
# The driver's DKMS source package: copies into <dir> what the module's build
# reads, and nothing else (no emulator, runtime or tests).  Used by install.sh
# for /usr/src/hpu-<version> and by `make check-dkms`, which builds the module
# from that copy alone.
# Usage: dkms-tree.sh <dir>
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: dkms-tree.sh <dir>}

# Kbuild descends into kernel/, which includes uapi/ (the ABI) and hw/ (registers, firmware).
paths=(Kbuild dkms.conf kernel uapi hw)

rm -rf "$dir"
mkdir -p "$dir"
# Sources only, not the objects of an earlier `make module` (ignored by git).
cd "$top"
{ git ls-files -z --cached --others --exclude-standard -- "${paths[@]}" 2>/dev/null ||
	find "${paths[@]}" -type f -print0; } | xargs -0 cp --parents -t "$dir"
