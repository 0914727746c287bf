#!/bin/bash
# make check-bisect: the tree builds after every patch of the series.
# Uses its own worktree and object directories (build/bisect-*), applies
# one patch at a time and builds the kernel and modules after each, and
# the C files the patch changes in the compile-test configuration of
# scripts/compile-test.sh (drivers the guest kernel does not build).
set -u
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"

SERIES='' "$TOP/scripts/prepare-tree.sh" || exit 1
base=$(git -C "$BUILD/linux" rev-parse debian)
wt=$BUILD/bisect-tree obj=$BUILD/bisect-obj
git -C "$BUILD/linux" worktree remove -f "$wt" 2>/dev/null
rm -rf "$wt"
git -C "$BUILD/linux" worktree prune
git -C "$BUILD/linux" worktree add -q -f --detach "$wt" "$base" || exit 1
mkdir -p "$obj"
cp "$BUILD/obj-patched/.config" "$obj/.config" 2>/dev/null ||
	die "build the patched kernel first (make qemu-test)"
"$TOP/scripts/compile-test.sh" >/dev/null || die "scripts/compile-test.sh fails on the whole series"
# Compile-test targets: x86_64 and each configs/compile-test-TARGET.config,
# whose "# arch:" and "# cross:" lines name its ARCH and compiler prefix
# (as in scripts/compile-test.sh).
tline() { sed -n "s/^# $2: *//p" "$TOP/configs/compile-test-$1.config"; }
targets=x86_64
for f in "$TOP"/configs/compile-test-*.config; do
	[ -f "$f" ] || continue
	t=${f##*/compile-test-}
	targets="$targets ${t%.config}"
done
for t in $targets; do
	mkdir -p "$obj-compile-$t"
	cp "$BUILD/obj-compile-$t-patched/.config" "$obj-compile-$t/.config"
done
# compile_changed N: build the C files of the last commit, each in the
# compile-test object directory of its target.
compile_changed() {
	local f o t a cross
	for f in $(git -C "$wt" diff --name-only HEAD~1 HEAD -- '*.c'); do
		o=${f%.c}.o a=x86_64 cross=
		for t in $targets; do
			[ "$t" = x86_64 ] && continue
			grep -qx "# object: *$o" "$TOP/configs/compile-test-$t.config" || continue
			a=$(tline "$t" arch) cross=$(tline "$t" cross)
			a=${a:-$t} cross=${cross:-$a-linux-gnu-}
			break
		done
		[ "$a" = x86_64 ] && t=x86_64
		make -s -C "$wt" O="$obj-compile-$t" ARCH="$a" CROSS_COMPILE="$cross" \
			CC="${cc%gcc}${cross}gcc" -j"$(nproc)" olddefconfig "$o" >>"$obj/build-$1.log" 2>&1 ||
			return 1
	done
}

cc=gcc
command -v ccache >/dev/null 2>&1 && cc="ccache gcc"
# ccache keeps its own default directory; paths relative to the build
# directory let another clone of this repository hit the same entries.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$BUILD}
n=0 bad=0
while read -r p; do
	case "$p" in '' | '#'*) continue ;; esac
	n=$((n + 1))
	git -C "$wt" am -q "$TOP/patches/$p" || die "patches/$p does not apply"
	t0=$(date +%s)
	if make -s -C "$wt" O="$obj" CC="$cc" -j"$(nproc)" olddefconfig bzImage modules \
		>"$obj/build-$n.log" 2>&1 && compile_changed "$n"; then
		log "ok $n $p (built in $(($(date +%s) - t0))s)"
	else
		log "not ok $n $p: the tree does not build, see $obj/build-$n.log"
		grep -m5 -E 'error|Error' "$obj/build-$n.log" >&2
		bad=$((bad + 1))
	fi
done <"$TOP/series"
echo "bisect: $((n - bad)) passed, $bad failed"
[ "$bad" -eq 0 ]
