#!/bin/bash
# Boot the variant's kernel and initramfs in QEMU with the throttled test
# disks and record the serial console in $RESULTS/console.log.
# MODE=run (the suite, then power off) or MODE=shell (interactive).
# QEMU_EXTRA adds options (make bench uses it for -icount).
set -eu
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"
# shellcheck source=scripts/qemu-x86_64.conf
. "$(dirname "$0")/qemu-x86_64.conf"

MODE=${MODE:-run}
TIMEOUT=${TIMEOUT:-2400}
RESULTS=${RESULTS:?RESULTS must name the results directory}
# PIN_RACES_SECONDS: how long selftests/pin_races repeats each row (a soak).
case "${PIN_RACES_SECONDS:-}" in
*[!0-9]*) die "PIN_RACES_SECONDS must be a number of seconds, not '$PIN_RACES_SECONDS'" ;;
esac
kernel=$OBJ/$QEMU_KERNEL
initrd=${INITRD:-$OBJ/initramfs.cpio.gz}
if [ ! -f "$kernel" ] || [ ! -f "$initrd" ]; then
	die "kernel or initramfs missing in $OBJ"
fi
mkdir -p "$RESULTS"

# Decide TCG or KVM once per machine: /dev/kvm may exist while a nested
# guest hangs, so only a guest that really boots counts.
accel() {
	local cache=$BUILD/accel
	case "${ACCEL:-auto}" in
	tcg | kvm) echo "$ACCEL"; return ;;
	esac
	# Two guests may start at once: one probes, the other waits for it.
	wait_lock "$cache.lock"
	if [ ! -s "$cache" ]; then
		local a=tcg
		if [ -w /dev/kvm ]; then
			log "probing KVM (30 s at most)"
			# shellcheck disable=SC2086
			if timeout -k 2 30 "$QEMU" $QEMU_MACHINE $QEMU_CPU_KVM -no-reboot \
				-display none -monitor none -serial stdio -kernel "$kernel" \
				-initrd "$initrd" -append "$QEMU_CMDLINE foll.mode=probe" \
				</dev/null 2>/dev/null | grep -q FOLL-PIN-PROBE-OK; then
				a=kvm
			fi
		fi
		echo "$a" >"$cache"
	fi
	unlock
	cat "$cache"
}

# Fresh test disks each boot; QEMU throttling makes every request slow so
# that an O_DIRECT read stays in flight across fork() (dio_fork).
disks=$OBJ/disks
mkdir -p "$disks"
truncate -s 0 "$disks"/{raw,ext4,ext2,nfs,sg,vfat}.img
truncate -s 64M "$disks"/{raw,ext4,ext2,nfs,sg,vfat}.img
mkfs.ext4 -q -F "$disks/ext4.img"
mkfs.ext2 -q -F "$disks/ext2.img"
# FAT still does direct I/O through fs/direct-io.c on 6.12, where ext2
# has moved to iomap (selftests/dio_pins).
/bin/busybox mkdosfs "$disks/vfat.img" >/dev/null
# Behind the guest's own NFS export (initramfs/nfs-loopback).
mkfs.ext4 -q -F "$disks/nfs.img"
throttle=,throttling.iops-total=${DISK_IOPS:-20}
[ "${DISK_IOPS:-20}" = 0 ] && throttle=
# RAW_DISK=null (make bench): the raw disk is QEMU's null-co driver, which
# completes every request without touching a host file, so the
# guest's virtio-blk path, not the host's page cache and thread pool,
# decides how fast it goes.
case "${RAW_DISK:-file}" in
file) raw_drive="file=$disks/raw.img,format=raw" ;;
null) raw_drive="driver=null-co,size=256M,read-zeroes=on" ;;
*) die "RAW_DISK must be file or null, not '$RAW_DISK'" ;;
esac
drives=()
for d in raw ext4 ext2 nfs vfat; do
	drv="file=$disks/$d.img,format=raw"
	[ "$d" = raw ] && drv=$raw_drive
	drives+=(-drive "$drv,if=none,id=$d$throttle"
		-device "virtio-blk-pci,drive=$d,serial=dio-$d")
done
# selftests/pin_faults' device errors: QEMU's blkdebug driver fails the
# sectors scripts/blkdebug.conf names. Not throttled: its tests count
# I/Os, not races. blkdebug's legacy filename syntax is the one that
# reads the rules file, and it splits on ':'.
conf=$TOP/scripts/blkdebug.conf
case "$conf$disks" in *:*) die "blkdebug cannot take a path with ':': $conf, $disks" ;; esac
truncate -s 0 "$disks/fault.img"
truncate -s 16M "$disks/fault.img"
drives+=(-drive "file=blkdebug:$conf:$disks/fault.img,format=raw,if=none,id=fault"
	-device "virtio-blk-pci,drive=fault,serial=dio-fault")
# The SG_IO tests' disk: virtio-scsi, so the guest sees /dev/sda.
drives+=(-device "virtio-scsi-pci,id=scsi0"
	-drive "file=$disks/sg.img,format=raw,if=none,id=sg$throttle"
	-device "scsi-hd,drive=sg,bus=scsi0.0,serial=dio-sg")
# selftests/v9fs_kill's export: a host directory over virtio-9p, its reads
# throttled (QEMU's fsdev throttle) so that one stays queued in the host
# for seconds. The test's HOST_BPS must match.
p9dir=$disks/p9
rm -rf "$p9dir"
mkdir -p "$p9dir"
case "$p9dir" in *,*) die "QEMU's -fsdev cannot take a path with ',': $p9dir" ;; esac
drives+=(-fsdev "local,id=p9,path=$p9dir,security_model=none,throttling.bps-read=32768"
	-device "virtio-9p-pci,fsdev=p9,mount_tag=p9test")
# Both host daemons below end with this script.
# shellcheck disable=SC2317 # called by the EXIT trap
stop_daemons() {
	"$(dirname "$0")/virtiofs-export.sh" stop "$vfsdir" || true
	"$(dirname "$0")/tape-target.sh" stop "$tapedir" || true
}
vfsdir=$disks/vfs
tapedir=$disks/tape
trap stop_daemons EXIT
# selftests/virtiofs_kill's export: virtiofsd over vhost-user-fs, its file
# reads held for seconds (virtiofs-export.sh; the guest's RAM is a shared
# memfd, qemu-x86_64.conf). The test's HOST_DELAY_MS must match.
if sock=$(VFS_DELAY_MS=3000 "$(dirname "$0")/virtiofs-export.sh" start "$vfsdir"); then
	drives+=(-chardev "socket,id=vfs,path=$sock"
		-device "vhost-user-fs-pci,chardev=vfs,tag=vfstest")
else
	log "no virtio-fs export, virtiofs_kill will skip: see $vfsdir/virtiofsd.log"
fi
# A DMA-capable PCI device for selftests/vfio_pins to bind to vfio-pci.
drives+=(-device edu)
# selftests/st_pins' tape: tgt's virtual tape over iSCSI on loopback,
# passed through as a scsi-generic device (the guest's st driver binds).
if tape=$("$(dirname "$0")/tape-target.sh" start "$tapedir"); then
	drives+=(-drive "file=$tape,if=none,id=tape"
		-device "scsi-generic,drive=tape,bus=scsi0.0")
else
	log "no tape target, st_pins will fail: see $tapedir/tgtd.log"
fi

a=$(accel)
cpu=$QEMU_CPU_TCG
[ "$a" = kvm ] && cpu=$QEMU_CPU_KVM
append="$QEMU_CMDLINE foll.mode=$MODE"
[ -n "${TESTS:-}" ] && append="$append foll.tests=$(echo "$TESTS" | tr ' ' ,)"
[ -n "${PIN_RACES_SECONDS:-}" ] && append="$append foll.pin_races_seconds=$PIN_RACES_SECONDS"
echo "$a" >"$RESULTS/accel"
log "booting $VARIANT kernel under $a ($MODE), timeout ${TIMEOUT}s"

# shellcheck disable=SC2086
set -- "$QEMU" $QEMU_MACHINE $cpu -no-reboot -kernel "$kernel" -initrd "$initrd" \
	-append "$append" "${drives[@]}" -nic none ${QEMU_EXTRA:-}
if [ "$MODE" = shell ]; then
	# Not exec: the EXIT trap stops the host daemons.
	"$@" -nographic
	exit
fi

rc=0
timeout -k 5 "$TIMEOUT" "$@" -display none -monitor none -serial stdio </dev/null \
	2>"$RESULTS/qemu.stderr" | tee "$RESULTS/console.log" |
	sed -un 's/^# START \(.*\)/  running \1/p' >&2 || rc=$?
rc=${PIPESTATUS[0]}
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "timeout after ${TIMEOUT}s" >"$RESULTS/timeout"
	log "guest timed out after ${TIMEOUT}s"
elif [ "$rc" -ne 0 ]; then
	log "qemu exited with $rc: $(head -c 500 "$RESULTS/qemu.stderr")"
fi
exit 0
