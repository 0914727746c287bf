#!/bin/bash
# make check stage: compile every C file the series changes (and the
# "# also:" files of configs/compile-test.config) with W=1, in
# Debian's tree and in the patched one, and fail when a patched object has
# a warning its stock version has not (or does not build). Most objects
# build on x86_64 with configs/compile-test.config; a file whose driver
# only exists on another architecture is listed in
# configs/compile-test-<target>.config ("# object: path.o") and built with
# Debian's cross compiler. The target names the file and the objects'
# directories; its kernel ARCH is the "# arch:" line (default: the
# target), its compiler prefix the "# cross:" line (default:
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
	local v=$2 o=$3 obj=$BUILD/obj-compile-$1-$2 out rc
	# An up-to-date object prints nothing; ccache replays the warnings.
	rm -f "$obj/$o"
	out=$(make -C "$BUILD/tree-$v" O="$obj" ARCH="$arch" \
		CROSS_COMPILE="$cross" CC="$ccache${cross}gcc" -j"$(nproc)" W=1 "$o" 2>&1)
	rc=$?
	printf '%s\n' "$out" >"$obj/${o//\//_}.log"
	if [ "$rc" -ne 0 ]; then echo error; return; fi
	printf '%s\n' "$out" | grep -c 'warning:' || true
}

configure() { # TARGET
	local t=$1 v base frags
	for v in none patched; do
		if [ "$t" = x86_64 ]; then
			base=tinyconfig
			frags=("$TOP/configs/base.config" "$TOP/configs/compile-test.config")
		else
			base=$(ct_line "$t" base)
			frags=("$TOP/configs/compile-test-$t.config")
		fi
		TREE=$BUILD/tree-$v ARCH=$arch CROSS_COMPILE=$cross CC="$ccache${cross}gcc" \
			"$s/configure-kernel.sh" "$BUILD/obj-compile-$t-$v" "$base" "${frags[@]}" ||
			return 1
	done
}

rc=0
printf '%-58s %-10s %6s %7s\n' OBJECT ARCH STOCK PATCHED
for t in x86_64 $(printf '%s\n' "$other" | cut -f1 | sort -u); do
	arch=$t cross=
	if [ "$t" != x86_64 ]; then
		arch=$(ct_arch "$t") cross=$(ct_cross "$t")
		command -v "${cross}gcc" >/dev/null || die "no ${cross}gcc (apt-get install gcc-${cross%-})"
	fi
	configure "$t" || { echo "compile-test: cannot configure $t"; rc=1; continue; }
	for f in "${files[@]}"; do
		o=${f%.c}.o
		a=$(printf '%s\n' "$other" | awk -F '\t' -v o="$o" '$2 == o {print $1}')
		[ "${a:-x86_64}" = "$t" ] || continue
		ws=$(build "$t" none "$o")
		wp=$(build "$t" patched "$o")
		printf '%-58s %-10s %6s %7s\n' "$o" "$t" "$ws" "$wp"
		if [ "$wp" = error ] || { [ "$ws" != error ] && [ "$wp" -gt "$ws" ]; }; then
			echo "  new warning or build failure: $BUILD/obj-compile-$t-patched/${o//\//_}.log"
			rc=1
		fi
	done
done
exit "$rc"
