# shellcheck shell=bash
# Shared settings and helpers, sourced by the other scripts.

TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILD=${BUILD:-$TOP/build}
SERIES=${SERIES:-patched}

# BASE picks Debian's kernel source: linux-source-6.1 (the default, with
# patches/ and series) or linux-source-6.12 (patches-6.12/ and
# series-6.12). Each base has its own tree, objects and results, 6.12's
# under $BUILD/6.12, and the tree's mm selftests under their name in it.
BASE=${BASE:-6.1}
case "$BASE" in
6.1)
	PATCHES=$TOP/patches SERIES_FILE=$TOP/series KSFT_MM=vm
	;;
6.12)
	PATCHES=$TOP/patches-6.12 SERIES_FILE=$TOP/series-6.12 KSFT_MM=mm
	case "$BUILD" in */6.12) ;; *) BUILD=$BUILD/6.12 ;; esac
	;;
*) echo "error: BASE must be 6.1 or 6.12 (got '$BASE')" >&2; exit 2 ;;
esac
LINUX_TARBALL=${LINUX_TARBALL:-/usr/src/linux-source-$BASE.tar.xz}
LINUX_PKG=${LINUX_PKG:-linux-source-$BASE}
export BASE PATCHES SERIES_FILE KSFT_MM

# The variant name keeps the patched and the stock kernel apart on disk.
case "$SERIES" in
none) VARIANT=none ;;
patched | series | '') VARIANT=patched ;;
*) echo "error: SERIES must be 'none' or unset (got '$SERIES')" >&2; exit 2 ;;
esac
export VARIANT
TREE=$BUILD/tree-$VARIANT
# Objects live in a directory directly inside their tree: kbuild then
# names every source by a relative path (srctree is ".."), so the stock
# and the patched build run the same compiler command line and ccache
# serves the patched build every object the series does not change (about
# a third of the kernel). build/obj-<kind> is a symlink to it.
kind=
DEBUG=${DEBUG:-}
[ -n "$DEBUG" ] && [ "$DEBUG" != 0 ] && kind=$kind-debug
# O2=1: build at -O2 as Debian does (tinyconfig picks -Os); make bench's
# default.
O2=${O2:-}
[ -n "$O2" ] && [ "$O2" != 0 ] && kind=$kind-o2
OBJ=$TREE/obj$kind
OBJ_LINK=$BUILD/obj-$VARIANT$kind
unset kind
export TOP BUILD TREE OBJ OBJ_LINK

# ccache for every kernel build: paths relative to the build directory let
# another clone hit the same entries; depend mode takes the dependencies
# from the compiler's own -MMD output instead of running the preprocessor
# a second time on a miss (a cold build of fs/ext4 and mm: 147 s against
# 200 s, the same with no ccache at all; 2026-12-07).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$BUILD} CCACHE_DEPEND=${CCACHE_DEPEND:-1}

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# stage NAME CMD...: run one long step, saying what runs and how long it took.
stage() {
	local name=$1 t0 rc
	shift
	t0=$(date +%s)
	log "stage $name: start"
	"$@"
	rc=$?
	local what="done"
	[ "$rc" -eq 0 ] || what="FAILED (exit $rc)"
	log "stage $name: $what in $(($(date +%s) - t0))s"
	return "$rc"
}

# lock_tree x|s: hold $TREE.lock for the rest of the script, exclusive to
# prepare the variant's tree, shared to build from it. A second run on the
# same tree would otherwise rewrite it under a build: it fails at once
# instead, saying why.
lock_tree() {
	mkdir -p "$BUILD"
	exec 9>"$TREE.lock"
	flock -n "-$1" 9 ||
		die "another run is using $TREE ($TREE.lock): wait for it, or give this one its own BUILD="
}

# wait_lock FILE: wait for and hold FILE on fd 7 until unlock, around a
# step two runs sharing one build directory must not do at once (make
# check boots the stock guest beside the patched one). A daemon started
# under it must get 7>&- or it keeps the lock.
wait_lock() {
	mkdir -p "$(dirname "$1")"
	exec 7>"$1"
	flock 7
}
unlock() { exec 7>&-; }

# end_daemon PID: give it 5 s to end, then SIGKILL it.
end_daemon() {
	local _
	for _ in $(seq 50); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$1" 2>/dev/null || true
}

pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null; }

# Hash of everything that decides the content of the prepared tree.
series_hash() {
	if [ "$VARIANT" = none ]; then
		echo none
		return
	fi
	(
		cat "$SERIES_FILE"
		grep -v '^#' "$SERIES_FILE" | while read -r p; do
			[ -n "$p" ] && cat "$PATCHES/$p"
		done
	) | sha256sum | cut -c1-16
}

# Compile-test targets besides x86_64: one configs/compile-test-TARGET.config
# each, whose "# KEY:" lines say its base config, objects, kernel ARCH
# (default: the target) and compiler prefix (default: ARCH-linux-gnu-).
ct_targets() {
	local f t
	for f in "$TOP"/configs/compile-test-*.config; do
		[ -f "$f" ] || continue
		t=${f##*/compile-test-}
		echo "${t%.config}"
	done
}
ct_line() { sed -n "s/^# $2: *//p" "$TOP/configs/compile-test-$1.config"; }
ct_arch() { local a; a=$(ct_line "$1" arch); echo "${a:-$1}"; }
ct_cross() { local c; c=$(ct_line "$1" cross); echo "${c:-$(ct_arch "$1")-linux-gnu-}"; }

# bench_kernels: the stock and the patched kernel with fio in their
# initramfs, as make bench and make profile boot them (O2 as exported).
bench_kernels() {
	local v sv
	for v in none patched; do
		sv=$v
		[ "$v" = patched ] && sv=
		SERIES=$sv stage "prepare-$v" "$TOP/scripts/prepare-tree.sh" || return 1
		SERIES=$sv stage "build-$v" "$TOP/scripts/build-kernel.sh" || return 1
		SERIES=$sv BENCH=1 stage "initramfs-$v" "$TOP/scripts/build-initramfs.sh" || return 1
	done
}
