#!/bin/bash
# make check stage: compile every C file the series changes (and, on 6.1,
# the "# also:" files of configs/compile-test.config) with W=1 in the patched
# tree, and fail when a patched object does not build or has a warning its
# stock version has not. Stock objects are built only on a target where a
# patched object warns: a clean object needs no baseline, and each stock
# configuration costs a full "make prepare". Most objects build on x86_64
# with configs/compile-test.config (BASE=6.12: 6.12-compile-test.config); a file whose driver only exists on
# another architecture is listed in configs/compile-test-<target>.config
# ("# object: path.o") and built with Debian's cross compiler. The target
# names the file and the objects' directories (inside each tree,
# obj-compile-<target>); its kernel ARCH is the "# arch:" line (default:
# the target), its compiler prefix the "# cross:" line (default:
# ARCH-linux-gnu-).
set -u -o pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"
# count_warnings LOG OBJECT...: print "OBJECT N" for each object, N its
# W=1 warnings in LOG (a make -O run: each object's "CC" line is followed
# by its own compiler and objtool output), or "OBJECT error" when the
# object was not built. Warnings before any CC line come from make's own
# steps (another kbuild step line ends an object's output), not from a
# changed file.
count_warnings() {
	local log=$1
	shift
	awk -v objs="$*" '
		BEGIN { n = split(objs, o, " "); for (i = 1; i <= n; i++) w[o[i]] = 0 }
		/^  CC( \[M\])? / { cur = $NF; next }
		/^  [A-Z][A-Z0-9_]* / { cur = ""; next }
		/warning:/ && (cur in w) { w[cur]++ }
		END { for (i = 1; i <= n; i++) print o[i], w[o[i]] }' "$log" |
		while read -r o c; do
			if [ -n "${objdir:-}" ] && [ ! -f "$objdir/$o" ]; then c=error; fi
			echo "$o $c"
		done
}
if [ "${1:-}" = --count-warnings ]; then
	shift
	count_warnings "$@"
	exit 0
fi

s=$TOP/scripts
ccache=
command -v ccache >/dev/null 2>&1 && ccache="ccache "
export KBUILD_BUILD_TIMESTAMP=2023-01-01 KBUILD_BUILD_USER=foll-pin KBUILD_BUILD_HOST=qemu

for v in none patched; do
	sv=$v
	[ "$v" = patched ] && sv=
	SERIES=$sv "$s/prepare-tree.sh" || die "cannot prepare the $v tree"
done
patched=$BUILD/tree-patched
# A file the series deletes has no object to build: --diff-filter=d.
base_rev=$(cut -d' ' -f1 "$patched/.prepared")
mapfile -t files < <(git -C "$patched" diff --name-only --diff-filter=d "$base_rev" HEAD -- '*.c' | LC_ALL=C sort)
[ "${#files[@]}" -gt 0 ] || die "the series changes no C file"
# Plus, on 6.1, the files configs/compile-test.config lists as "# also:"
# (callers that already pin in Debian's tree and that the guest cannot
# drive). Another base has its own x86_64 fragment and no such list.
if [ "$BASE" = 6.1 ]; then
	x86_frags=("$TOP/configs/base.config" "$TOP/configs/compile-test.config")
	mapfile -t files < <({ printf '%s\n' "${files[@]}"
		sed -n 's/^# also: *//p' "$TOP/configs/compile-test.config"; } | LC_ALL=C sort -u)
else
	x86_frags=("$TOP/configs/base.config" "$TOP/configs/$BASE.config"
		"$TOP/configs/$BASE-compile-test.config")
fi

# Objects that belong to another architecture and that the series
# changes: target TAB object. A target with none is not built.
other=$(for t in $(ct_targets); do
	ct_line "$t" object | sed "s|^|$t\t|"
done | while IFS=$'\t' read -r t o; do
	printf '%s\n' "${files[@]}" | grep -qxF "${o%.o}.c" && printf '%s\t%s\n' "$t" "$o"
done)

# build TARGET VARIANT OBJECT...: build the objects with W=1 in one make
# (each make spends seconds on its own checks before compiling anything)
# and print "OBJECT N" per object as count_warnings does.
build() {
	local t=$1 v=$2 obj=$BUILD/tree-$2/obj-compile-$1 log
	shift 2
	log=$obj/compile-test.log
	# An up-to-date object prints nothing; ccache replays the warnings.
	(cd "$obj" && rm -f "$@")
	make -C "$BUILD/tree-$v" O="$obj" ARCH="$arch" CROSS_COMPILE="$cross" \
		CC="$ccache${cross}gcc" -j"$(nproc)" -k -O W=1 "$@" >"$log" 2>&1
	objdir=$obj count_warnings "$log" "$@"
}

configure() { # TARGET VARIANT
	local t=$1 v=$2 base frags
	if [ "$t" = x86_64 ]; then
		base=tinyconfig
		frags=("${x86_frags[@]}")
	else
		base=$(ct_line "$t" base)
		frags=("$TOP/configs/compile-test-$t.config")
	fi
	TREE=$BUILD/tree-$v ARCH=$arch CROSS_COMPILE=$cross CC="$ccache${cross}gcc" \
		"$s/configure-kernel.sh" "$BUILD/tree-$v/obj-compile-$t" "$base" "${frags[@]}"
}

# check_target TARGET: configure and build TARGET's objects, print one
# row per object; fail on a new warning or a build failure. Where a
# patched object is clean its stock version is not built (STOCK -).
check_target() {
	local t=$1 arch=$1 cross="" rc=0 o a f p b bad stock c
	if [ "$t" != x86_64 ]; then
		arch=$(ct_arch "$t") cross=$(ct_cross "$t")
		command -v "${cross}gcc" >/dev/null || die "no ${cross}gcc (apt-get install gcc-${cross%-})"
	fi
	configure "$t" patched || { echo "compile-test: cannot configure $t"; return 1; }
	local objs=() warned=()
	local -A wp=() ws=()
	for f in "${files[@]}"; do
		o=${f%.c}.o
		a=$(printf '%s\n' "$other" | awk -F '\t' -v o="$o" '$2 == o {print $1}')
		[ "${a:-x86_64}" = "$t" ] || continue
		objs+=("$o")
	done
	while read -r o c; do
		wp[$o]=$c
		case "$c" in error | 0) ;; *) warned+=("$o") ;; esac
	done < <(build "$t" patched "${objs[@]}")
	stock=ok
	if [ "${#warned[@]}" -gt 0 ]; then
		if configure "$t" none; then
			while read -r o c; do ws[$o]=$c; done < <(build "$t" none "${warned[@]}")
		else
			echo "compile-test: cannot configure stock $t"
			stock=failed rc=1
		fi
	fi
	for o in "${objs[@]}"; do
		p=${wp[$o]:-error} b=${ws[$o]:--}
		case "$p" in
		error) bad=1 ;;
		0) bad=0 ;;
		*)
			bad=1
			if [ "$stock" = ok ] && [ "$b" != error ] && [ "$b" != - ] &&
				[ "$p" -le "$b" ]; then
				bad=0
			fi
			;;
		esac
		printf '%-58s %-10s %6s %7s\n' "$o" "$t" "$b" "$p"
		if [ "$bad" -eq 1 ]; then
			echo "  new warning or build failure: $BUILD/tree-patched/obj-compile-$t/compile-test.log"
			rc=1
		fi
	done
	return "$rc"
}

# The targets at once: each configuration's "make prepare" is mostly
# serial, so together they keep both cores busy (cold, 2026-12-07: 217 s
# one after the other). Output in target order.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mapfile -t targets < <(echo x86_64; printf '%s\n' "$other" | cut -f1 | sed '/^$/d' | sort -u)
pids=()
for t in "${targets[@]}"; do
	check_target "$t" >"$out/$t" 2>&1 &
	pids+=($!)
done
rc=0
printf '%-58s %-10s %6s %7s\n' OBJECT ARCH STOCK PATCHED
for i in "${!targets[@]}"; do
	wait "${pids[$i]}" || rc=1
	cat "$out/${targets[$i]}"
done
exit "$rc"
