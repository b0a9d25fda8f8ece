#!/usr/bin/env bash
# `make bench` / `make bench-<name>`: one guest boot running the named benchmarks.
# A benchmark with a host half (build/tests/bench/host_<name>) runs it first,
# on the machine running the emulator; its output is in build/bench-host/<name>.txt,
# which the guest reads through its read-only view of the host.  The host half
# then serves the guest half during the run (--serve, through files in the
# guest's writable output directory), so that host and device can take turns.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/bench-run
[ $# -gt 0 ] || { echo "run-bench: no benchmarks named" >&2; exit 2; }
mkdir -p "$top/build/bench-host"
servers=()
for name in "$@"; do
	host=$top/build/tests/bench/host_$name
	if [ -x "$host" ]; then
		"$host" >"$top/build/bench-host/$name.txt"
		rm -f "$out/$name".*
		"$host" --serve "$out" &
		servers+=($!)
	fi
done
status=0
"$top/tests/guest/run-guest.sh" -t 1200 -o "$out" -- tests/guest/run-benches.sh "$@" || status=$?
for pid in "${servers[@]}"; do
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
done
exit $status
