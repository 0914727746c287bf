#!/bin/bash
# Install what the harness needs from Debian, or say what to run.
set -eu
pkgs="linux-source-${BASE:-6.1} gcc make flex bison bc libelf-dev libssl-dev cpio
qemu-system-x86 busybox-static bash-static git ccache e2fsprogs
libcap-dev libnuma-dev shellcheck perl python3 kmod rsync
gcc-powerpc-linux-gnu libtirpc3 libtirpc-common iproute2
tgt qemu-block-extra gcc-s390x-linux-gnu qemu-system-common strace"
[ -n "${EXTRA_PKGS:-}" ] && pkgs="$pkgs $EXTRA_PKGS"
missing=
for p in $pkgs; do
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	case "$st" in ii*) ;; *) missing="$missing $p" ;; esac
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "error: missing packages; run as root:" >&2
	echo "  apt-get install$missing" >&2
	exit 1
fi
echo "installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
apt-get install -y -q $missing >/dev/null 2>&1 ||
	{ apt-get update -q >/dev/null && apt-get install -y -q $missing >/dev/null; } ||
	{ echo "error: apt-get install$missing failed" >&2; exit 1; }
