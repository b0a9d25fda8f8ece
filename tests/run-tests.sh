#!/usr/bin/env bash
# `make test`: the source checks (tests/lint), the host unit tests (also under
# ASan/UBSan), then one guest boot running every in-guest suite, then the users'
# launcher's test (tests/launcher, a short boot of its own).  Gathers the TAP of all, prints "N passed, M
# failed" last, and exits non-zero on any failure, a sanitizer report, a guest
# kernel warning/oops, or a timeout.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
res=$top/build/test-results
rm -rf "$res"
mkdir -p "$res"
problems=()

# Rules the sources keep (tests/lint/*.sh, each TAP on stdout).
for t in "$top"/tests/lint/*.sh; do
	name=$(basename "$t" .sh)
	echo "# source check $name"
	"$t" >"$res/lint-$name.tap" 2>&1 || problems+=("source check $name failed")
	cat "$res/lint-$name.tap"
done

for t in "$top"/build/tests/host/test_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	echo "# host suite $name"
	(cd "$top" && "$t") >"$res/host-$name.tap" 2>&1 || problems+=("host suite $name exited non-zero")
	cat "$res/host-$name.tap"
done

# The same suites built with AddressSanitizer and UBSan: their tests are counted once, above;
# a report or a failure here is a problem.
mkdir -p "$res/host-san"
clean=0
for t in "$top"/build/tests/host-san/test_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	if (cd "$top" && "$t") >"$res/host-san/$name.tap" 2>&1; then
		clean=$((clean + 1))
	else
		problems+=("host suite $name under ASan/UBSan exited non-zero ($res/host-san/$name.tap)")
		tail -20 "$res/host-san/$name.tap"
	fi
done
echo "# host suites under ASan/UBSan: $clean clean"

start=$(date +%s.%N)
# -p: torture_test unplugs and re-plugs the device through QEMU.
"$top/tests/guest/run-guest.sh" -t 1200 -p -o "$top/build/guest-run" -- tests/guest/run-suites.sh
rc=$?
end=$(date +%s.%N)
case $rc in
0) ;;
124) problems+=("guest timed out: where it was in build/guest-run/hang.txt and console.log") ;;
125) problems+=("guest died before the suites finished") ;;
126) problems+=("guest kernel log has a warning, BUG or oops") ;;
*) problems+=("guest suites exited $rc") ;;
esac
for f in "$top"/build/guest-run/*.tap; do
	[ -e "$f" ] && cp "$f" "$res/guest-$(basename "$f")"
done
awk -v s="$start" -v e="$end" 'BEGIN { printf "# guest run: %.1f s wall\n", e - s }'

# The users' launcher, scripts/hpu-vm: its rules, and a boot of its own.
echo "# launcher scripts/hpu-vm"
start=$(date +%s.%N)
"$top/tests/launcher/hpu_vm.sh" >"$res/launcher-hpu_vm.tap" 2>&1 || problems+=("launcher test failed")
cat "$res/launcher-hpu_vm.tap"
awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "# launcher: %.1f s wall\n", e - s }'

# Top-level TAP results only: subtests in kselftest output are indented.
pass=$(cat "$res"/*.tap 2>/dev/null | grep -cE '^ok [0-9]+' || true)
fail=$(cat "$res"/*.tap 2>/dev/null | grep -cE '^not ok [0-9]+' || true)
skip=$(cat "$res"/*.tap 2>/dev/null | grep -cE '^ok [0-9]+.*# SKIP' || true)
# A skipped test proved nothing: count it as a failure.
pass=$((pass - skip))
fail=$((fail + skip))
for p in "${problems[@]}"; do echo "# problem: $p"; done
fail=$((fail + ${#problems[@]}))
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
