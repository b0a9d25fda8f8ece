#!/usr/bin/env bash
# Boots the test guest under TCG with the hpu device and runs a command in it.
#
#   run-guest.sh [-t SECONDS] [-o OUTDIR] [-d DEVICE-OPTS] -- COMMAND [ARGS...]
#
# The guest runs Debian's kernel under TCG (KVM guests hang on these hosts) from
# a busybox initramfs that mounts the host's root read-only over 9p: COMMAND (a
# path on the host) runs with the host's userland and this tree's build, as root,
# in the top directory.  OUTDIR (default build/guest-run) is shared writable and
# appears in the guest as $HPU_OUT; after the run it holds `rc` (COMMAND's exit
# status), `dmesg.txt` and `qemu.log` (the guest errors the device model logged),
# `console.log`, and after a timeout `hang.txt` (guest-state.sh: where the guest's
# CPUs were).  Exits with COMMAND's status, 124 on timeout, 125 if the guest died,
# and 126 if the guest kernel log has a warning, BUG or oops.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
timeout=600
out=$top/build/guest-run
devopts=
while getopts "t:o:d:" opt; do
	case $opt in
	t) timeout=$OPTARG ;;
	o) out=$OPTARG ;;
	d) devopts=,$OPTARG ;;
	*) sed -n '3,14p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { sed -n '3,14p' "$0" >&2; exit 2; }

kver=$("$top/scripts/guest-kernel.sh")
qemu=$top/build/qemu-system-x86_64
initrd=$top/build/guest/initramfs-$kver.cpio.gz
[ -x "$qemu" ] || { echo "run-guest: $qemu missing (make qemu)" >&2; exit 2; }
if [ ! -f "$initrd" ] || [ "$top/tests/guest/init" -nt "$initrd" ] ||
	[ "$top/tests/guest/mkinitramfs.sh" -nt "$initrd" ]; then
	mkdir -p "$(dirname "$initrd")"
	"$top/tests/guest/mkinitramfs.sh" "$kver" "$initrd"
fi

# The device as the guest sees it; tests read these back through the driver.
hbm_size=$((32 << 30)) num_dma=8 num_mme=2 num_tpc=8 boot_delay_ms=100

rm -rf "$out"
mkdir -p "$out"
{
	echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	echo "export HOME=/root TMPDIR=/run/tmp HPU_TOP='$top' HPU_OUT=/run/hpu-out HPU_KVER='$kver'"
	echo "mkdir -p /run/tmp"
	echo "export HPU_EXPECT_HBM_SIZE=$hbm_size HPU_EXPECT_NUM_DMA=$num_dma"
	echo "export HPU_EXPECT_NUM_MME=$num_mme HPU_EXPECT_NUM_TPC=$num_tpc"
	echo "export HPU_BOOT_DELAY_MS=$boot_delay_ms"
	echo "cd '$top' || exit 1"
	printf 'exec'
	printf " %q" "$@"
	echo
} >"$out/cmd.sh"

# The monitor on pipes: a timeout asks it where the guest's CPUs are (hang.txt) before killing.
mon=$(mktemp -d)
mkfifo "$mon/monitor.in" "$mon/monitor.out"
qemu_pid=
cleanup() {
	[ -z "$qemu_pid" ] || kill -KILL "$qemu_pid" 2>/dev/null || true
	rm -rf "$mon"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# tsc=reliable: under TCG the guest's TSC is the host's (invariant, the same on every CPU), but
# the kernel's boot-time sync check fails on the emulated CPUs' skew and falls back to the
# acpi_pm clocksource, which makes every clock_gettime a system call and a port read.
# sysrq_always_enabled: so that a timeout can have the guest print where it is (guest-state.sh).
# slub_debug=FZPU page_poison=1: the kernel checks its slab objects (red zones, poison, frees)
# and poisons freed pages, so that a driver's use after free or overrun shows in its log.
cmdline="console=ttyS0 rdinit=/init panic=-1 quiet tsc=reliable sysrq_always_enabled"
cmdline+=" slub_debug=FZPU page_poison=1 firmware_class.path=$top/build/firmware"
"$qemu" \
	-nodefaults -no-user-config -no-reboot -display none \
	-d guest_errors -D "$out/qemu.log" \
	-machine pc,accel=tcg -cpu max -smp 2 -m 2G \
	-L /usr/share/qemu -L /usr/share/seabios \
	-serial mon:stdio -monitor pipe:"$mon/monitor" \
	-kernel "/boot/vmlinuz-$kver" -initrd "$initrd" \
	-append "$cmdline" \
	-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
	-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
	-fsdev local,id=hpuout,path="$out",security_model=none,multidevs=remap \
	-device virtio-9p-pci,fsdev=hpuout,mount_tag=hpuout \
	-device "hpu,hbm-size=$hbm_size,num-dma=$num_dma,num-mme=$num_mme,num-tpc=$num_tpc,boot-delay-ms=$boot_delay_ms$devopts" \
	</dev/null > >(tee "$out/console.log") &
qemu_pid=$!
# The watchdog polls rather than sleeping the whole timeout, so that it ends with QEMU.
(
	for ((left = timeout; left > 0; left--)); do
		sleep 1
		kill -0 "$qemu_pid" 2>/dev/null || exit 0
	done
	touch "$mon/timed-out"
	"$top/tests/guest/guest-state.sh" "$mon/monitor" >"$out/hang.txt" 2>&1
	kill -TERM "$qemu_pid"
	for ((left = 10; left > 0; left--)); do
		sleep 1
		kill -0 "$qemu_pid" 2>/dev/null || exit 0
	done
	kill -KILL "$qemu_pid"
) >/dev/null 2>&1 &
watchdog=$!
status=0
wait "$qemu_pid" || status=$?
qemu_pid=
wait "$watchdog" || true

if [ -e "$mon/timed-out" ]; then
	# The gist here too, for a CI log that may be all there is: each CPU's RIP, halted or not,
	# and the interrupt counts, per sample.
	echo "run-guest: timed out after ${timeout}s; where the guest was ($out/hang.txt," \
		"its backtraces in $out/console.log):" >&2
	grep -E '^\(qemu\) info (cpus|irq)|CPU #|RIP=|IRQ statistics|^ *[0-9]+: [0-9]+$' \
		"$out/hang.txt" >&2 || true
	exit 124
fi
if [ ! -f "$out/rc" ]; then
	echo "run-guest: the guest stopped before the command finished (qemu status $status)" >&2
	exit 125
fi
# A slab debugging report reads "BUG <cache> (<taint>): ...", a page poisoning one "pagealloc: ...".
if grep -nE 'WARNING:|BUG:|BUG [^ ]+ \(|pagealloc: |Oops|Call Trace|general protection fault|Kernel panic' \
	"$out/dmesg.txt" >&2; then
	echo "run-guest: the guest kernel log has the problems above ($out/dmesg.txt)" >&2
	exit 126
fi
exit "$(cat "$out/rc")"
