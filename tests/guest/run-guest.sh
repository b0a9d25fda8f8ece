#!/usr/bin/env bash
# Boots the test guest under TCG with the hpu device and runs a command in it.
#
#   run-guest.sh [-t SECONDS] [-o OUTDIR] [-d DEVICE-OPTS] [-w DIR]... [-q] [-p] -- COMMAND [ARG...]
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
# For scripts/hpu-vm, which runs a user's command: -w shares DIR writable too, at
# the same path in the guest (made in its tmpfs if the guest does not see it); -q
# keeps the console, and a timeout's gist, off the terminal (they stay in OUTDIR).
# HPU_GUEST_KERNEL=DIR boots instead the kernel built in DIR (scripts/build-debug-kernel.sh,
# which builds in what Debian's loads as modules) and has the guest load the hpu module
# HPU_GUEST_MODULE, built against it; the guest sees the module's path as HPU_KO.
# -p lets the guest unplug and re-plug its device (torture_test): QEMU gets a QMP socket, and
# tests/guest/hotplug-relay.py runs "device_del"/"device_add" there when the guest asks through
# a file in OUTDIR; the guest sees HPU_HOTPLUG=1.  The device (id hpu0) sits on the pc
# machine's root bus either way, where QEMU's ACPI PCI hot-plug can take it away.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
timeout=600
out=$top/build/guest-run
devopts=
shares=() quiet= hotplug=
while getopts "t:o:d:w:qp" opt; do
	case $opt in
	t) timeout=$OPTARG ;;
	o) out=$OPTARG ;;
	d) devopts=,$OPTARG ;;
	w) shares+=("$OPTARG") ;;
	q) quiet=1 ;;
	p) hotplug=1 ;;
	*) sed -n '3,24p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { sed -n '3,24p' "$0" >&2; exit 2; }

qemu=$top/build/qemu-system-x86_64
if [ -n "${HPU_GUEST_KERNEL:-}" ]; then
	kver=$(cat "$HPU_GUEST_KERNEL/include/config/kernel.release")
	kernel=$HPU_GUEST_KERNEL/arch/x86/boot/bzImage
	ko=${HPU_GUEST_MODULE:?run-guest: HPU_GUEST_KERNEL needs HPU_GUEST_MODULE}
	# No module in the initramfs (mkinitramfs.sh -): the kernel has them built in.
	initrd=$top/build/guest/initramfs-builtin.cpio.gz initrd_kver=-
else
	kver=$("$top/scripts/guest-kernel.sh")
	kernel=/boot/vmlinuz-$kver
	ko=$top/kernel/hpu.ko
	initrd=$top/build/guest/initramfs-$kver.cpio.gz initrd_kver=$kver
fi
[ -x "$qemu" ] || { echo "run-guest: $qemu missing (make qemu)" >&2; exit 2; }
if [ ! -f "$initrd" ] || [ "$top/tests/guest/init" -nt "$initrd" ] ||
	[ "$top/tests/guest/mkinitramfs.sh" -nt "$initrd" ]; then
	mkdir -p "$(dirname "$initrd")"
	"$top/tests/guest/mkinitramfs.sh" "$initrd_kver" "$initrd"
fi

# The device as the guest sees it; tests read these back through the driver.
hbm_size=$((32 << 30)) num_dma=8 num_mme=2 num_tpc=8 boot_delay_ms=100
device="hpu,id=hpu0,hbm-size=$hbm_size,num-dma=$num_dma,num-mme=$num_mme,num-tpc=$num_tpc"
device+=",boot-delay-ms=$boot_delay_ms$devopts"

# quote WORD: WORD as one word of cmd.sh, which the host's sh (dash) reads: no $'...'.
quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
# qemu_opt VALUE: VALUE inside a QEMU option list, where a comma is written twice.
qemu_opt() { printf '%s' "${1//,/,,}"; }

# The writable shares, as QEMU devices and as cmd.sh's mounts.
extra=() setup=()
for i in "${!shares[@]}"; do
	extra+=(-fsdev "local,id=share$i,path=$(qemu_opt "${shares[$i]}"),security_model=none,multidevs=remap"
		-device "virtio-9p-pci,fsdev=share$i,mount_tag=share$i")
	dir=$(quote "${shares[$i]}")
	# A path the guest does not see (under its own /run) is made in its tmpfs.  cache=mmap:
	# writes go through to the host, and a program may map a file shared and writable.
	opts=trans=virtio,version=9p2000.L,msize=512000,cache=mmap
	setup+=("mkdir -p $dir 2>/dev/null; mount -t 9p -o $opts share$i $dir ||
	{ echo 'run-guest: cannot mount the share of '$dir >&2; exit 1; }")
done

rm -rf "$out"
mkdir -p "$out"
{
	echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	echo "export HOME=/root TMPDIR=/run/tmp HPU_TOP='$top' HPU_OUT=/run/hpu-out HPU_KVER='$kver'"
	echo "export HPU_KO=$(quote "$ko")"
	echo "mkdir -p /run/tmp"
	echo "export HPU_EXPECT_HBM_SIZE=$hbm_size HPU_EXPECT_NUM_DMA=$num_dma"
	echo "export HPU_EXPECT_NUM_MME=$num_mme HPU_EXPECT_NUM_TPC=$num_tpc"
	echo "export HPU_BOOT_DELAY_MS=$boot_delay_ms"
	[ -z "$hotplug" ] || echo "export HPU_HOTPLUG=1"
	[ ${#setup[@]} -eq 0 ] || printf '%s\n' "${setup[@]}"
	echo "cd '$top' || exit 1"
	printf 'exec'
	for arg; do printf ' %s' "$(quote "$arg")"; done
	echo
} >"$out/cmd.sh"

# The monitor on pipes: a timeout asks it where the guest's CPUs are (hang.txt) before killing.
mon=$(mktemp -d)
mkfifo "$mon/monitor.in" "$mon/monitor.out"
qmp=()
[ -z "$hotplug" ] || qmp=(-qmp "unix:$mon/qmp.sock,server=on,wait=off")
qemu_pid= relay_pid=
cleanup() {
	[ -z "$qemu_pid" ] || kill -KILL "$qemu_pid" 2>/dev/null || true
	[ -z "$relay_pid" ] || kill "$relay_pid" 2>/dev/null || true
	rm -rf "$mon"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# console: the guest's console into console.log, and onto the terminal unless -q.
console() { if [ -n "$quiet" ]; then cat >"$out/console.log"; else tee "$out/console.log"; fi; }

# tsc=reliable: under TCG the guest's TSC is the host's (invariant, the same on every CPU), but
# the kernel's boot-time sync check fails on the emulated CPUs' skew and falls back to the
# acpi_pm clocksource, which makes every clock_gettime a system call and a port read.
# sysrq_always_enabled: so that a timeout can have the guest print where it is (guest-state.sh).
# slub_debug=FZPU page_poison=1: the kernel checks its slab objects (red zones, poison, frees)
# and poisons freed pages, so that a driver's use after free or overrun shows in its log.
cmdline="console=ttyS0 rdinit=/init panic=-1 quiet tsc=reliable sysrq_always_enabled"
cmdline+=" firmware_class.path=$top/build/firmware"
# The debug kernel's KASAN checks what these would, and closer.
[ -n "${HPU_GUEST_KERNEL:-}" ] || cmdline+=" slub_debug=FZPU page_poison=1"
"$qemu" \
	-nodefaults -no-user-config -no-reboot -display none \
	-d guest_errors -D "$out/qemu.log" \
	-machine pc,accel=tcg -cpu max -smp 2 -m 2G \
	-L /usr/share/qemu -L /usr/share/seabios \
	-serial mon:stdio -monitor pipe:"$mon/monitor" \
	-kernel "$kernel" -initrd "$initrd" \
	-append "$cmdline" \
	-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
	-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
	-fsdev local,id=hpuout,path="$(qemu_opt "$out")",security_model=none,multidevs=remap \
	-device virtio-9p-pci,fsdev=hpuout,mount_tag=hpuout \
	-device "$device" "${qmp[@]}" \
	"${extra[@]}" </dev/null > >(console) &
qemu_pid=$!
if [ -n "$hotplug" ]; then
	/usr/bin/python3 "$top/tests/guest/hotplug-relay.py" "$mon/qmp.sock" "$out" "$device" \
		>>"$out/hotplug.log" 2>&1 &
	relay_pid=$!
fi
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
	where="run-guest: timed out after ${timeout}s; where the guest was ($out/hang.txt, its"
	where+=" backtraces in $out/console.log)"
	if [ -n "$quiet" ]; then
		echo "$where" >&2
	else
		echo "$where:" >&2
		grep -E '^\(qemu\) info (cpus|irq)|CPU #|RIP=|IRQ statistics|^ *[0-9]+: [0-9]+$' \
			"$out/hang.txt" >&2 || true
	fi
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
