#!/bin/bash
# make check-bisect: the tree builds after every patch of the series.
# Uses its own worktree and object directories (build/bisect-tree, objects in it), applies
# one patch at a time and builds the kernel and modules after each, and
# the C files the patch changes in the compile-test configuration of
# scripts/compile-test.sh (drivers the guest kernel does not build).
set -u
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"

SERIES='' "$TOP/scripts/prepare-tree.sh" || exit 1
base=$(git -C "$BUILD/linux" rev-parse debian)
# Objects inside the worktree, as common.sh keeps them: relative source
# paths let ccache serve each step every object the step shares with the
# stock or the patched build.
wt=$BUILD/bisect-tree obj=$BUILD/bisect-tree/obj
git -C "$BUILD/linux" worktree remove -f "$wt" 2>/dev/null
rm -rf "$wt"
git -C "$BUILD/linux" worktree prune
git -C "$BUILD/linux" worktree add -q -f --detach "$wt" "$base" || exit 1
mkdir -p "$obj"
cp "$BUILD/tree-patched/obj/.config" "$obj/.config" 2>/dev/null ||
	die "build the patched kernel first (make qemu-test)"
"$TOP/scripts/compile-test.sh" >/dev/null || die "scripts/compile-test.sh fails on the whole series"
targets="x86_64 $(ct_targets | tr '\n' ' ')"
for t in $targets; do
	mkdir -p "$obj-compile-$t"
	cp "$BUILD/tree-patched/obj-compile-$t/.config" "$obj-compile-$t/.config"
done
# compile_changed N: build the C files of the last commit, each in the
# compile-test object directory of its target (common.sh, ct_*).
compile_changed() {
	local f o t c a cross
	for f in $(git -C "$wt" diff --name-only --diff-filter=d HEAD~1 HEAD -- '*.c'); do
		o=${f%.c}.o t=x86_64 a=x86_64 cross=
		for c in $(ct_targets); do
			if ct_line "$c" object | grep -qx "$o"; then
				t=$c a=$(ct_arch "$c") cross=$(ct_cross "$c")
				break
			fi
		done
		make -s -C "$wt" O="$obj-compile-$t" ARCH="$a" CROSS_COMPILE="$cross" \
			CC="${cc%gcc}${cross}gcc" -j"$(nproc)" olddefconfig "$o" >>"$obj/build-$1.log" 2>&1 ||
			return 1
	done
}

cc=gcc
command -v ccache >/dev/null 2>&1 && cc="ccache gcc"
n=0 bad=0
while read -r p; do
	case "$p" in '' | '#'*) continue ;; esac
	n=$((n + 1))
	git -C "$wt" am -q "$PATCHES/$p" || die "${PATCHES#"$TOP"/}/$p does not apply"
	t0=$(date +%s)
	if make -s -C "$wt" O="$obj" CC="$cc" -j"$(nproc)" olddefconfig bzImage modules \
		>"$obj/build-$n.log" 2>&1 && compile_changed "$n"; then
		log "ok $n $p (built in $(($(date +%s) - t0))s)"
	else
		log "not ok $n $p: the tree does not build, see $obj/build-$n.log"
		grep -m5 -E 'error|Error' "$obj/build-$n.log" >&2
		bad=$((bad + 1))
	fi
done <"$SERIES_FILE"
echo "bisect: $((n - bad)) passed, $bad failed"
[ "$bad" -eq 0 ]
