#!/usr/bin/env bash
# `make bench` / `make bench-<name>`: one guest boot running the named benchmarks.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || { echo "run-bench: no benchmarks named" >&2; exit 2; }
exec "$top/tests/guest/run-guest.sh" -t 1200 -o "$top/build/bench-run" -- tests/guest/run-benches.sh "$@"
