#!/usr/bin/env bash
# The users' launcher, scripts/hpu-vm (TAP, run by tests/run-tests.sh after the suites' guest):
# its usage, environment rule, command and build checks on the host, without a boot (-n); then
# one boot running a script of a scratch directory (a space and a comma in its path) that writes
# files there, prints on both streams and exits 7, checked here; then a boot stopped by INT and
# one stopped by -t, each leaving no QEMU and no files behind.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
vm=$top/scripts/hpu-vm
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The launcher's own files go under $TMPDIR: here, so that what it leaves (and any QEMU still
# running on them) can be seen.
export TMPDIR=$scratch/tmp
mkdir "$TMPDIR"

n=0 failed=0
# ok STATUS DESCRIPTION: one TAP line, passing if STATUS is 0.
ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi
}
# expect WANT DESCRIPTION CMD...: CMD exits WANT; its output is kept in $scratch/out.
expect() {
	local want=$1 what=$2 rc=0
	shift 2
	"$@" >"$scratch/out" 2>&1 || rc=$?
	[ "$rc" -eq "$want" ] || sed "s/^/# /; 1i # exit $rc, not $want:" "$scratch/out"
	ok $((rc != want)) "$what"
}
# has PATTERN: the last expect's output has a line matching PATTERN (grep -E).
has() { grep -qE -- "$1" "$scratch/out" || { sed 's/^/# /' "$scratch/out"; false; }; }
# running: a process on the launcher's files under $TMPDIR (QEMU, run-guest.sh).
running() { pgrep -f -- "$TMPDIR" >/dev/null; }
# left: what the launcher left under $TMPDIR, files and processes (none wanted; run-guest.sh's
# watchdog polls QEMU each second, so it may outlive it by as much).
left() {
	for ((i = 0; i < 30; i++)); do running || break; sleep 0.1; done
	ls -A "$TMPDIR" | sed 's/^/# left: /'
	pgrep -af -- "$TMPDIR" | sed 's/^/# still running: /'
	[ -z "$(ls -A "$TMPDIR")" ] && ! running
}

echo "TAP version 13"

# Usage and the checks that cost no boot.
expect 0 "-h prints the usage" "$vm" -h
has '^  scripts/hpu-vm \[-t SECONDS\]'; ok $? "-h names the options"
expect 125 "no command: usage, 125" "$vm" -t 5
expect 125 "-t wants seconds" "$vm" -t soon true
start=$SECONDS
expect 127 "an unknown command: 127" "$vm" no-such-command-hpu-vm
has 'no-such-command-hpu-vm: command not found' && [ $((SECONDS - start)) -lt 5 ]
ok $? "an unknown command is named, and found before booting"
expect 127 "a path that is not executable: 127" "$vm" ./no-such-file
expect 125 "the root directory is not shared" sh -c "cd / && '$vm' -n true"

# The environment rule, read from the command -n prints: the words between the guest half's
# DIR IO and its --.
guest_env() {
	local words i
	eval "words=($("$vm" -n "$@"))"
	for i in "${!words[@]}"; do [ "${words[$i]}" != scripts/hpu-vm-guest.sh ] || break; done
	for ((i += 7; i < ${#words[@]}; i++)); do
		[ "${words[$i]}" != -- ] || break
		echo "${words[$i]}"
	done
}
env_is() { grep -qxF -- "$1" "$scratch/env" || { sed 's/^/# env: /' "$scratch/env"; false; }; }
env_lacks() { ! grep -q "^$1=" "$scratch/env"; }
PT_HPU_LAZY_MODE=0 PT_HPU_MAX_COMPOUND_OP_SIZE=7 LOG_LEVEL_PT_FALLBACK=1 HPU_LOG_FALLBACK=1 \
	VM_TEST_HIDDEN=1 VM_TEST_E=2 LD_LIBRARY_PATH=/mine PYTHONPATH=/py \
	guest_env -e VM_TEST_E PT_HPU_LAZY_MODE=1 'VM_TEST_W=a b' -- true >"$scratch/env"
env_is PT_HPU_MAX_COMPOUND_OP_SIZE=7 && env_is LOG_LEVEL_PT_FALLBACK=1 &&
	env_is HPU_LOG_FALLBACK=1 && env_is PT_HPU_LAZY_MODE=1
ok $? "PT_HPU_*, LOG_LEVEL_* and HPU_* pass; NAME=VALUE before the command wins"
env_lacks VM_TEST_HIDDEN && ! grep -q '^PYTHONPATH=.*/py$' "$scratch/env" && env_is VM_TEST_E=2 &&
	env_is 'VM_TEST_W=a b'
ok $? "other variables pass only by -e NAME or NAME=VALUE"
env_is "LD_LIBRARY_PATH=$top/build/userspace/lib"
ok $? "libhpu on the library path; a caller's LD_LIBRARY_PATH only by -e"
guest_env PYTHONPATH=/py true >"$scratch/env"
if [ -d "$top/build/userspace/pytorch" ]; then
	env_is "PYTHONPATH=$top/build/userspace/pytorch:/py"
else
	env_is PYTHONPATH=/py
fi
ok $? "PYTHONPATH: the bridge's build first, if built, then the caller's"
# A tree that is not built: a copy of the launcher with nothing around it.
mkdir -p "$scratch/tree/scripts"
cp "$vm" "$top/scripts/guest-kernel.sh" "$scratch/tree/scripts/"
expect 125 "a tree not built: 125" "$scratch/tree/scripts/hpu-vm" true
has 'not built: QEMU with the hpu device' && has 'not built: the driver' &&
	has 'not built: the firmware' && has 'not built: libhpu' && has 'make -C'
ok $? "a tree not built: each missing part named, and make"

# One boot: a script of the scratch directory, run there by a relative path.
work="$scratch/a dir, with a comma"
mkdir "$work"
cat >"$work/job.sh" <<'EOF'
#!/bin/sh
echo early
sleep 3
echo "to stdout: $1|$2"
echo "to stderr" >&2
mkdir out
pwd >out/pwd
id -u >out/uid
printf '%s\n' "${PT_HPU_VM_TEST-unset}" "${VM_TEST_HIDDEN-unset}" >out/env
hpu-smi >out/smi 2>&1
exit 7
EOF
chmod +x "$work/job.sh"
stamp() { while IFS= read -r line; do echo "$SECONDS $line"; done; }
start=$SECONDS
(cd "$work" && PT_HPU_VM_TEST=passed VM_TEST_HIDDEN=1 "$vm" -t 600 ./job.sh one 'two words' \
	2>"$scratch/stderr" | stamp >"$scratch/stdout"; echo "${PIPESTATUS[0]}" >"$scratch/rc")
end=$SECONDS
echo "# boot and run: $((end - start)) s"
sed 's/^/# stdout: /' "$scratch/stdout"
sed 's/^/# stderr: /' "$scratch/stderr"
rc=$(cat "$scratch/rc")
[ "$rc" -eq 7 ]
ok $? "the command's exit status comes back (7, got $rc)"
grep -q ' to stdout: one|two words$' "$scratch/stdout" && ! grep -q 'to stderr' "$scratch/stdout" &&
	grep -qx 'to stderr' "$scratch/stderr" && ! grep -q 'to stdout' "$scratch/stderr"
ok $? "stdout and stderr come back, each to its own; arguments intact"
early=$(sed -n 's/ early$//p' "$scratch/stdout")
[ -n "$early" ] && [ $((end - early)) -ge 2 ]
ok $? "output comes as the command runs (early at ${early:-never}, end at $end)"
[ "$(cat "$work/out/pwd")" = "$work" ]
ok $? "the command runs in the caller's directory, at the same path"
[ "$(stat -c %u:%g "$work/out" "$work/out/pwd" | sort -u)" = "$(id -u):$(id -g)" ] &&
	[ "$(cat "$work/out/uid")" = "$(id -u)" ]
ok $? "it runs as the caller, and what it writes there is the caller's"
[ "$(cat "$work/out/env")" = "$(printf 'passed\nunset')" ]
ok $? "PT_HPU_* passes, other variables do not"
grep -q 'device 0' "$work/out/smi" || sed 's/^/# hpu-smi: /' "$work/out/smi"
ok $? "the driver is loaded and the device's node is the caller's to open (hpu-smi)"
left
ok $? "nothing left behind"

# Stopped early: by INT (Ctrl-C) while QEMU runs, and by -t.  A background job of a script
# ignores INT, so the launcher runs in the foreground and the signal comes from the background.
(
	for ((i = 0; i < 100; i++)); do pgrep -f -- "qemu-system.*$TMPDIR" >/dev/null && break; sleep 0.1; done
	echo "$SECONDS" >"$scratch/sent"
	kill -INT "$(cat "$scratch/pid")"
) &
bash -c 'echo $$ >"$0"; exec "$1" sleep 600' "$scratch/pid" "$vm" >"$scratch/out" 2>&1
rc=$?
took=$((SECONDS - $(cat "$scratch/sent")))
[ "$rc" -eq 130 ] && [ "$took" -le 5 ] || sed 's/^/# /' "$scratch/out"
ok $? "INT stops the guest at once: 130 (got $rc in $took s)"
left
ok $? "nothing left behind after INT"
expect 124 "-t 3: 124" "$vm" -t 3 sleep 600
has 'stopped after -t 3s'
ok $? "a timeout is named"
rm -rf "$TMPDIR"/hpu-vm.*
left
ok $? "no QEMU left after a timeout"

echo "1..$n"
exit $failed
