#!/bin/bash
# Build the guest's initramfs for one variant: busybox, bash, the tree's
# vm selftests (gup_test, run_vmtests.sh), this repo's selftests, the
# kernel's modules and, for EXTRA=DIR, the user's own test programs.
set -eu
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"

[ -f "$OBJ/arch/x86/boot/bzImage" ] || die "no kernel in $OBJ: run scripts/build-kernel.sh"
root=$OBJ/initramfs
image=$OBJ/initramfs.cpio.gz
if [ -n "${BENCH:-}" ]; then
	root=$OBJ/initramfs-bench
	image=$OBJ/initramfs-bench.cpio.gz
fi
ksft=$OBJ/kselftest
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,mnt,root,lib,selftests,extra}

# The tree's mm selftests keep their directory's name (vm on 6.1, mm on
# 6.12) in the guest: etc/suite names /kselftest/vm and is rewritten.
m=$KSFT_MM
# 6.12.118's mm/khugepaged.c returns KSFT_SKIP without including
# kselftest.h (a stable backport's check): give it the value.
cflags=-static
[ "$BASE" = 6.12 ] && cflags="$cflags -DKSFT_SKIP=4"
log "building tools/testing/selftests/$m (static)"
mkdir -p "$ksft/$m"
make -s -C "$TREE/tools/testing/selftests/$m" OUTPUT="$ksft/$m" \
	KHDR_INCLUDES="-isystem $OBJ/usr/include" EXTRA_CFLAGS="$cflags" \
	LDFLAGS=-static CAN_BUILD_I386=0 >"$ksft.log" 2>&1 ||
	{ tail -20 "$ksft.log" >&2; die "$m selftests failed to build, see $ksft.log"; }
mkdir -p "$root/kselftest/$m"
cp -a "$ksft/$m/." "$root/kselftest/$m/"
cp "$TREE"/tools/testing/selftests/$m/*.sh "$root/kselftest/$m/"

log "building selftests/"
make -s -C "$TOP/selftests" TREE="$TREE" HDRS="$OBJ/usr/include" \
	OUTPUT="$OBJ/selftests" >"$OBJ/selftests.log" 2>&1 ||
	{ cat "$OBJ/selftests.log" >&2; die "selftests/ failed to build"; }
find "$OBJ/selftests" -maxdepth 1 -type f -perm -u+x -exec cp {} "$root/selftests/" \;

if [ -n "${EXTRA:-}" ]; then
	[ -d "$EXTRA" ] || die "EXTRA=$EXTRA is not a directory"
	cp -a "$EXTRA/." "$root/extra/"
fi

cp /bin/busybox "$root/bin/busybox"
for applet in $(/bin/busybox --list); do
	[ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
cp /bin/bash-static "$root/bin/bash"
cp "$TOP/initramfs/init" "$root/init"
cp "$TOP/initramfs/run-suite" "$root/bin/run-suite"
cp "$TOP/initramfs/sudo" "$root/bin/sudo"
sed "s|/kselftest/vm|/kselftest/$m|g" \
	"$TOP/initramfs/suite" >"$root/etc/suite"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nnobody:x:65534:\n' >"$root/etc/group"
[ -d "$OBJ/modinst/lib/modules" ] && cp -a "$OBJ/modinst/lib/modules" "$root/lib/"

# Debian programs go in as they are, with the libraries ldd names
# (copy_prog BINARY [DEST]); LD_LIBRARY_PATH finds the extracted ones.
copy_prog() {
	local bin=$1 dest=${2:-$1} f missing
	missing=$(ldd "$bin" | awk '/not found/ {print $1}')
	[ -z "$missing" ] || die "$bin needs $missing, which is not installed"
	mkdir -p "$root$(dirname "$dest")"
	cp -L "$bin" "$root$dest"
	for f in $(ldd "$bin" | awk '$3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
		mkdir -p "$root$(dirname "${f#"$debroot"}")"
		cp -L "$f" "$root${f#"$debroot"}"
	done
}

# Guest-only packages, fetched with apt-get download and unpacked under
# $BUILD, never installed on the host (they would start services here):
# NFS server tools for initramfs/nfs-loopback; perftest with rdma-core's
# libibverbs and its rxe provider for selftests/ib_perftest_pins; Samba's
# smbd for initramfs/smb-loopback.
debroot=$BUILD/guest-debs/root
guest_debs="nfs-kernel-server nfs-common libwrap0"
guest_debs="$guest_debs perftest ibverbs-providers libibverbs1 librdmacm1"
guest_debs="$guest_debs libibumad3 libpci3 libnl-3-200 libnl-route-3-200"
guest_debs="$guest_debs samba samba-libs samba-common-bin libwbclient0"
guest_debs="$guest_debs libtalloc2 libtevent0 libtdb1 libldb2"
# make check builds the stock and patched images at once: one fetches,
# the other waits for it and reuses its download.
wait_lock "$BUILD/guest-debs.lock"
if [ "$(cat "$debroot/.debs" 2>/dev/null)" != "$guest_debs" ]; then
	log "fetching $guest_debs (apt-get download)"
	rm -rf "$BUILD/guest-debs"
	mkdir -p "$debroot"
	# shellcheck disable=SC2086 # one argument per package
	(cd "$BUILD/guest-debs" && apt-get download -q $guest_debs >download.log 2>&1) ||
		die "apt-get download $guest_debs failed, see $BUILD/guest-debs/download.log"
	for d in "$BUILD"/guest-debs/*.deb; do dpkg-deb -x "$d" "$debroot"; done
	echo "$guest_debs" >"$debroot/.debs"
fi
unlock
export LD_LIBRARY_PATH=$debroot/lib/x86_64-linux-gnu:$debroot/usr/lib/x86_64-linux-gnu:$debroot/usr/lib/x86_64-linux-gnu/samba
for p in usr/sbin/rpc.mountd usr/sbin/rpc.nfsd usr/sbin/exportfs \
	usr/bin/ib_write_bw usr/bin/ib_read_bw; do
	copy_prog "$debroot/$p" "/$p"
done
# libibverbs finds providers through /etc/libibverbs.d and dlopen()s them.
rxe=usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
copy_prog "$debroot/$rxe" "/$rxe"
mkdir -p "$root/etc/libibverbs.d"
cp "$debroot/etc/libibverbs.d/rxe.driver" "$root/etc/libibverbs.d/"
# smbd dlopen()s its modules (auth, vfs, pdb, ...) from its library
# directory: that goes in whole.
copy_prog "$debroot/usr/sbin/smbd" /usr/sbin/smbd
copy_prog "$debroot/usr/bin/smbpasswd" /usr/bin/smbpasswd
cp -a "$debroot/usr/lib/x86_64-linux-gnu/samba" "$root/usr/lib/x86_64-linux-gnu/"
cp "$TOP/initramfs/smb-loopback" "$root/bin/smb-loopback"
unset LD_LIBRARY_PATH
cp /etc/netconfig "$root/etc/netconfig"
cp "$TOP/initramfs/nfs-loopback" "$root/bin/nfs-loopback"
# fsdax_pins makes ext4 on /dev/pmem0 in the guest (busybox has no ext4).
copy_prog "$(command -v mke2fs)" /usr/sbin/mke2fs
cp /etc/mke2fs.conf "$root/etc/mke2fs.conf"
# dio_splice cuts a file's i_size with debugfs on the unmounted disk, so
# that the blocks past EOF stay mapped.
copy_prog "$(command -v debugfs)" /usr/sbin/debugfs
# ib_umem_pins makes its soft-RoCE device with iproute2's rdma.
copy_prog /usr/bin/rdma /usr/bin/rdma

# make bench and make profile: fio from Debian.
if [ -n "${BENCH:-}" ]; then
	command -v fio >/dev/null || die "fio is not installed (apt-get install fio)"
	copy_prog "$(command -v fio)"
	cp "$TOP/initramfs/bench-suite" "$root/bin/bench-suite"
	cp "$TOP/initramfs/profile-suite" "$root/bin/profile-suite"
fi

(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$image"
ls -l "$image" >&2
