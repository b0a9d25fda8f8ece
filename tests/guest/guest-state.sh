#!/usr/bin/env bash
# Where a stuck guest is: asks its QEMU monitor (a pipe chardev, MON.in and
# MON.out) for both CPUs' registers and the interrupt controllers' state and
# counts, three times a second apart, then has the guest kernel print every
# CPU's backtrace and its blocked tasks (magic SysRq keys through the
# emulated keyboard: run-guest.sh boots it with sysrq_always_enabled) to its
# console, which run-guest.sh keeps in OUTDIR/console.log.
#
#   guest-state.sh MON
#
# run-guest.sh writes the monitor's replies to OUTDIR/hang.txt when the
# guest times out: a storm shows as interrupt counts growing, a lockup as a
# RIP that does not move, CPUs halted in every sample as a lost wakeup.
set -uo pipefail
mon=$1

# Keep MON.out open for reading throughout, so that QEMU's replies wait in the pipe.
exec 3<>"$mon.out"
for sample in 1 2 3; do
	[ "$sample" = 1 ] || sleep 1
	printf 'info cpus\ninfo registers -a\ninfo lapic\ninfo pic\ninfo irq\n' >"$mon.in"
done
# SysRq 9: every message to the console; l: all CPUs' backtraces; w: tasks blocked.
printf 'sendkey alt-sysrq-9\nsendkey alt-sysrq-l\nsendkey alt-sysrq-w\n' >"$mon.in"
# The replies do not end in anything: read until the monitor goes quiet, while the guest prints.
timeout 5 cat <&3 >"$mon.replies"
exec 3<&-
# The monitor echoes each command as a line editor redraws it: keep the command.
sed -E 's/^\(qemu\) .*\x1b\[D([^\x1b]*)\x1b\[K\r?$/(qemu) \1/; s/\r$//' "$mon.replies"
