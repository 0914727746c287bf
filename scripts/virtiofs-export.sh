#!/bin/bash
# Serve DIR/src to the guest over vhost-user-fs with QEMU's virtiofsd
# (selftests/virtiofs_kill), cache=none so that every read goes to the
# host. strace holds each of the daemon's file reads (preadv, which
# writes into guest RAM) for VFS_DELAY_MS, so that a guest read stays in
# the host for seconds.
# Usage: virtiofs-export.sh start DIR   (prints the vhost-user socket)
#        virtiofs-export.sh stop DIR
set -eu
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"

usage="usage: virtiofs-export.sh start|stop DIR"
cmd=${1:?$usage}
dir=${2:?$usage}
daemon=/usr/lib/qemu/virtiofsd
delay_ms=${VFS_DELAY_MS:-3000}
case "$delay_ms" in '' | *[!0-9]*) die "VFS_DELAY_MS must be milliseconds, not '$delay_ms'" ;; esac

stop() {
	local pid
	pid=$(cat "$dir/strace.pid" 2>/dev/null) || return 0
	rm -f "$dir/strace.pid"
	# The daemon is strace's child; strace ends with it.
	pkill -P "$pid" 2>/dev/null || true
	end_daemon "$pid"
}

start() {
	local sock=$dir/vfs.sock pid
	[ -x "$daemon" ] || die "$daemon not found (Debian package qemu-system-common)"
	command -v strace >/dev/null || die "strace not found (Debian package strace)"
	# A unix socket's path has at most 107 bytes.
	[ "${#sock}" -lt 100 ] || die "socket path too long for vhost-user: $sock"
	stop
	rm -rf "$dir/src" "$sock"
	mkdir -p "$dir/src"
	# sandbox=chroot: the default (namespaces) fails in containers.
	# 7>&-: the daemon must not keep a caller's lock.
	strace -f -q -s 0 -o "$dir/strace.log" -e trace=preadv \
		-e inject=preadv:delay_enter=$((delay_ms * 1000)) \
		"$daemon" --socket-path="$sock" -o source="$dir/src" \
		-o cache=none -o sandbox=chroot >"$dir/virtiofsd.log" 2>&1 7>&- &
	pid=$!
	echo "$pid" >"$dir/strace.pid"
	for _ in $(seq 100); do
		[ -S "$sock" ] && { echo "$sock"; return 0; }
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	stop
	die "virtiofsd did not make $sock, see $dir/virtiofsd.log"
}

case "$cmd" in
start) start ;;
stop) stop ;;
*) die "$usage" ;;
esac
