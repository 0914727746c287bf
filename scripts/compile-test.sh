#!/bin/bash
# make check stage: compile every C file the series changes (and the
# "# also:" files of configs/compile-test.config) with W=1 in the patched
# tree, and fail when a patched object does not build or has a warning its
# stock version has not. Stock objects are built only on a target where a
# patched object warns: a clean object needs no baseline, and each stock
# configuration costs a full "make prepare". Most objects build on x86_64
# with configs/compile-test.config; a file whose driver only exists on
# another architecture is listed in configs/compile-test-<target>.config
# ("# object: path.o") and built with Debian's cross compiler. The target
# names the file and the objects' directories (inside each tree,
# obj-compile-<target>); its kernel ARCH is the "# arch:" line (default:
# the target), its compiler prefix the "# cross:" line (default:
# ARCH-linux-gnu-).
set -u -o pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"
s=$TOP/scripts
ccache=
command -v ccache >/dev/null 2>&1 && ccache="ccache "
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$BUILD}
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
# Plus the files configs/compile-test.config lists as "# also:" (callers
# that already pin in Debian's tree and that the guest cannot drive).
mapfile -t files < <({ printf '%s\n' "${files[@]}"
	sed -n 's/^# also: *//p' "$TOP/configs/compile-test.config"; } | LC_ALL=C sort -u)

# Objects that belong to another architecture: target TAB object.
other=$(for t in $(ct_targets); do
	ct_line "$t" object | sed "s|^|$t\t|"
done)

# build TARGET VARIANT OBJECT: print the object's W=1 warning count, or
# "error" when it does not build.
build() {
	local v=$2 o=$3 obj=$BUILD/tree-$2/obj-compile-$1 out rc
	# An up-to-date object prints nothing; ccache replays the warnings.
	rm -f "$obj/$o"
	out=$(make -C "$BUILD/tree-$v" O="$obj" ARCH="$arch" \
		CROSS_COMPILE="$cross" CC="$ccache${cross}gcc" -j"$(nproc)" W=1 "$o" 2>&1)
	rc=$?
	printf '%s\n' "$out" >"$obj/${o//\//_}.log"
	if [ "$rc" -ne 0 ]; then echo error; return; fi
	printf '%s\n' "$out" | grep -c 'warning:' || true
}

configure() { # TARGET VARIANT
	local t=$1 v=$2 base frags
	if [ "$t" = x86_64 ]; then
		base=tinyconfig
		frags=("$TOP/configs/base.config" "$TOP/configs/compile-test.config")
	else
		base=$(ct_line "$t" base)
		frags=("$TOP/configs/compile-test-$t.config")
	fi
	TREE=$BUILD/tree-$v ARCH=$arch CROSS_COMPILE=$cross CC="$ccache${cross}gcc" \
		"$s/configure-kernel.sh" "$BUILD/tree-$v/obj-compile-$t" "$base" "${frags[@]}"
}

# Where a patched object is clean its stock version is not built (STOCK -).
rc=0
printf '%-58s %-10s %6s %7s\n' OBJECT ARCH STOCK PATCHED
for t in x86_64 $(printf '%s\n' "$other" | cut -f1 | sort -u); do
	arch=$t cross=
	if [ "$t" != x86_64 ]; then
		arch=$(ct_arch "$t") cross=$(ct_cross "$t")
		command -v "${cross}gcc" >/dev/null || die "no ${cross}gcc (apt-get install gcc-${cross%-})"
	fi
	configure "$t" patched || { echo "compile-test: cannot configure $t"; rc=1; continue; }
	objs=() wps=() warned=0
	for f in "${files[@]}"; do
		o=${f%.c}.o
		a=$(printf '%s\n' "$other" | awk -F '\t' -v o="$o" '$2 == o {print $1}')
		[ "${a:-x86_64}" = "$t" ] || continue
		wp=$(build "$t" patched "$o")
		objs+=("$o") wps+=("$wp")
		case "$wp" in error | 0) ;; *) warned=1 ;; esac
	done
	stock=ok
	if [ "$warned" -eq 1 ] && ! configure "$t" none; then
		echo "compile-test: cannot configure stock $t"
		stock=failed rc=1
	fi
	for i in "${!objs[@]}"; do
		o=${objs[$i]} wp=${wps[$i]} ws=-
		case "$wp" in
		error) bad=1 ;;
		0) bad=0 ;;
		*)
			bad=1
			if [ "$stock" = ok ]; then
				ws=$(build "$t" none "$o")
				[ "$ws" = error ] || [ "$wp" -gt "$ws" ] || bad=0
			fi
			;;
		esac
		printf '%-58s %-10s %6s %7s\n' "$o" "$t" "$ws" "$wp"
		if [ "$bad" -eq 1 ]; then
			echo "  new warning or build failure: $BUILD/tree-patched/obj-compile-$t/${o//\//_}.log"
			rc=1
		fi
	done
done
exit "$rc"
