#!/bin/bash
# Serve a virtual tape (tgt's SSC backing store) over iSCSI on 127.0.0.1
# for the guest's SCSI tape driver (selftests/st_pins). QEMU's iscsi
# block driver hands a non-disk LUN to the guest as a scsi-generic device.
# Usage: tape-target.sh start DIR   (prints the iscsi:// URL of the tape)
#        tape-target.sh stop DIR
# A private tgtd with its own ports: a system tgt, or another run's
# target, is left alone.
set -eu
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"

usage="usage: tape-target.sh start|stop DIR"
cmd=${1:?$usage}
dir=${2:?$usage}
iqn=iqn.2026-12.example.foll-pin:tape

stop() {
	local pid ctl
	pid=$(cat "$dir/tgtd.pid" 2>/dev/null) || return 0
	ctl=$(cat "$dir/tgtd.ctl" 2>/dev/null) || ctl=
	rm -f "$dir/tgtd.pid" "$dir/tgtd.ctl"
	kill -0 "$pid" 2>/dev/null || return 0
	# tgtd ignores SIGTERM and shuts down only once its target is gone.
	if [ -n "$ctl" ]; then
		tgtadm -C "$ctl" --lld iscsi --op delete --mode target --tid 1 --force &&
			tgtadm -C "$ctl" --op delete --mode system
	fi >>"$dir/tgtd.log" 2>&1 || true
	end_daemon "$pid"
}

start() {
	local port='' p ctl pid
	command -v tgtd >/dev/null || die "tgtd not found (Debian package tgt; make deps installs it)"
	mkdir -p "$dir"
	stop
	for p in $(seq 3261 3299); do
		if ! ss -Hltn "sport = :$p" | grep -q .; then port=$p; break; fi
	done
	[ -n "$port" ] || die "no free TCP port in 3261-3299 for the tape target"
	ctl=$((port - 3000))
	rm -f "$dir/tape.img"
	tgtimg --op new --device-type tape --barcode FOLLPIN1 --size 64 --type data \
		--file "$dir/tape.img" >"$dir/tgtd.log" 2>&1 ||
		die "tgtimg failed, see $dir/tgtd.log"
	# 7>&-: the daemon must not keep the port-choice lock.
	tgtd -f -C "$ctl" --iscsi portal="127.0.0.1:$port" >>"$dir/tgtd.log" 2>&1 7>&- &
	pid=$!
	echo "$pid" >"$dir/tgtd.pid"
	echo "$ctl" >"$dir/tgtd.ctl"
	adm() { tgtadm -C "$ctl" --lld iscsi "$@" >>"$dir/tgtd.log" 2>&1; }
	for _ in $(seq 50); do
		adm --op show --mode sys && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if ! adm --op new --mode target --tid 1 -T "$iqn" ||
		! adm --op new --mode logicalunit --tid 1 --lun 1 --device-type tape \
			--bstype ssc -b "$dir/tape.img" ||
		! adm --op bind --mode target --tid 1 -I 127.0.0.1; then
		stop
		die "tgtd did not set up the tape target, see $dir/tgtd.log"
	fi
	echo "iscsi://127.0.0.1:$port/$iqn/1"
}

case "$cmd" in
start)
	# Two guests at once (make check boots stock beside patched): the
	# second picks its port only once the first's tgtd listens.
	wait_lock "$BUILD/tape-target.lock"
	start
	;;
stop) stop ;;
*) die "$usage" ;;
esac
