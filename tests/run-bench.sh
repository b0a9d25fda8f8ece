#!/usr/bin/env bash
# `make bench` / `make bench-<name>`: one guest boot running the named benchmarks.
# A benchmark with a host half (build/tests/bench/host_<name>) runs it first,
# on the machine running the emulator; its output is in build/bench-host/<name>.txt,
# which the guest reads through its read-only view of the host.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || { echo "run-bench: no benchmarks named" >&2; exit 2; }
mkdir -p "$top/build/bench-host"
for name in "$@"; do
	host=$top/build/tests/bench/host_$name
	if [ -x "$host" ]; then
		"$host" >"$top/build/bench-host/$name.txt"
	fi
done
exec "$top/tests/guest/run-guest.sh" -t 1200 -o "$top/build/bench-run" -- tests/guest/run-benches.sh "$@"
