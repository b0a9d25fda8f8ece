#!/usr/bin/env bash
# `make test-debug`: one boot of the debug kernel (scripts/build-debug-kernel.sh: KASAN, lockdep,
# kmemleak, DMA-API debugging, fault injection) with the hpu module built against it, running
# the in-guest suites and a kmemleak scan at the end (tests/guest/debug-suites.sh).  Prints a
# line per suite, then every report of the kernel's checkers in the guest's kernel log, and
# "N passed, M failed" last, a report or a dead guest counted as a failure.  -a runs the
# runtime's own passes too (sanitizers, MNIST, PyTorch), which test user space, at twice the
# time.  Too slow for `make test`.
#
#   run-debug.sh [-a]
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/debug-run
all=()
[ "${1:-}" != -a ] || all=(-a)

start=$(date +%s)
# -p: torture_test unplugs and re-plugs the device through QEMU, as in make test.
HPU_GUEST_KERNEL=$top/build/debug/kernel HPU_GUEST_MODULE=$top/build/debug/hpu/kernel/hpu.ko \
	"$top/tests/guest/run-guest.sh" -q -p -t 5400 -o "$out" -- \
	tests/guest/debug-suites.sh "${all[@]}"
rc=$?
wall=$(($(date +%s) - start))

problems=()
case $rc in
124) problems+=("guest timed out: where it was in $out/hang.txt and console.log") ;;
125) problems+=("guest died before the suites finished") ;;
*) [ -f "$out/rc" ] || problems+=("run-guest.sh failed ($rc) before booting") ;;
esac
[ ! -f "$out/rc" ] || [ "$(cat "$out/rc")" = 0 ] || problems+=("a suite failed")

echo "# suites (TAP in $out)"
for f in "$out"/*.tap; do
	[ -e "$f" ] || continue
	pass=$(grep -cE '^ok [0-9]+' "$f")
	skip=$(grep -cE '^ok [0-9]+.*# SKIP' "$f")
	fail=$(grep -cE '^not ok [0-9]+' "$f")
	echo "suite $(basename "$f" .tap): $((pass - skip)) passed, $fail failed, $skip skipped"
done

# The checkers' reports: KASAN ("BUG: KASAN: ..."), lockdep (its reports are WARNINGs: circular
# locking, recursive locking, inconsistent lock state, irq inversion, suspicious RCU usage; and
# "BUG: MAX_LOCKDEP_..." when it turns itself off), might_sleep ("BUG: sleeping function called
# from invalid context"), kmemleak's scan (each object, kmemleak.verbose), DMA-API debugging
# (a WARNING each, "DMA-API: <driver> <device>: ..."; not its lines at boot), and any other
# WARN, BUG or oops.  The kernel log as the guest saved it at the end;
# the console if the guest died first.
log=$out/dmesg.txt
[ -f "$log" ] || log=$out/console.log
report='BUG:|WARNING:|possible circular locking|possible recursive locking|inconsistent lock state'
report+='|sleeping function called from invalid context|unreferenced object|DMA-API: '
report+='|Oops|general protection fault|Kernel panic'
boot_info='DMA-API: (preallocated [0-9]+ debug entries|debugging enabled by kernel config)'
reports=$(grep -nE "$report" "$log" 2>/dev/null | grep -vE "$boot_info")
if [ -n "$reports" ]; then
	n=$(echo "$reports" | wc -l)
	echo "# debug kernel reports: $n lines (whole reports in $log)"
	echo "$reports" | head -n 60 | sed 's/^/# report: /'
	problems+=("the debug kernel reported $n lines")
else
	echo "# debug kernel reports: none"
fi
[ -f "$log" ] || problems+=("no kernel log")
# DMA-API debugging warns of its first error only; it counts them all (if the guest got there).
if [ -f "$out/dma-api-errors" ]; then
	dma_errors=$(cat "$out/dma-api-errors")
	echo "# DMA-API debugging: $dma_errors errors"
	[ "$dma_errors" = 0 ] || problems+=("DMA-API debugging counted $dma_errors errors")
fi

boot=$(cat "$out/boot-seconds" 2>/dev/null || echo "?")
echo "# debug kernel run: ${wall} s wall, the suites started ${boot} s after boot"
for p in "${problems[@]}"; do echo "# problem: $p"; done
# Top-level TAP results only: subtests in kselftest output are indented.  A skipped test proved
# nothing: a failure, as in `make test`.
pass=$(cat "$out"/*.tap 2>/dev/null | grep -cE '^ok [0-9]+' || true)
fail=$(cat "$out"/*.tap 2>/dev/null | grep -cE '^not ok [0-9]+' || true)
skip=$(cat "$out"/*.tap 2>/dev/null | grep -cE '^ok [0-9]+.*# SKIP' || true)
pass=$((pass - skip))
fail=$((fail + skip + ${#problems[@]}))
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
