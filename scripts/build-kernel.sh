#!/bin/bash
# Configure (tinyconfig + configs/ fragments) and build the kernel of one
# variant out of tree in $OBJ, plus modules and the exported uapi headers.
set -eu
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"

[ -f "$TREE/.prepared" ] || die "$TREE is not prepared: run scripts/prepare-tree.sh"
mkdir -p "$OBJ"

frags=("$TOP/configs/base.config" "$TOP/configs/tests.config"
	"$TREE/tools/testing/selftests/vm/config")
if [ -n "$DEBUG" ] && [ "$DEBUG" != 0 ]; then
	frags+=("$TOP/configs/debug.config")
fi

cc=gcc
command -v ccache >/dev/null 2>&1 && cc="ccache gcc"
# ccache keeps its own default directory; paths relative to the build
# directory let another clone of this repository hit the same entries.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$BUILD}
# Fixed build identity so ccache hits across variants and reruns.
export KBUILD_BUILD_TIMESTAMP="${KBUILD_BUILD_TIMESTAMP:-2023-01-01}"
export KBUILD_BUILD_USER=foll-pin KBUILD_BUILD_HOST=qemu
mk() { make -C "$TREE" O="$OBJ" CC="$cc" -j"$(nproc)" "$@"; }

cfg_hash=$(cat "${frags[@]}" | sha256sum | cut -c1-16)
if [ "$(cat "$OBJ/.config-hash" 2>/dev/null)" != "$cfg_hash" ] || [ ! -f "$OBJ/.config" ]; then
	log "configuring $OBJ: tinyconfig + ${frags[*]##*/}"
	mk -s tinyconfig >/dev/null
	(cd "$TREE" && scripts/kconfig/merge_config.sh -m -O "$OBJ" "$OBJ/.config" "${frags[@]}") \
		>"$OBJ/merge_config.log" 2>&1 || die "merge_config.sh failed, see $OBJ/merge_config.log"
	mk -s olddefconfig >/dev/null
	# merge_config silently drops options whose dependencies are unmet.
	dropped=$(cat "${frags[@]}" | sed -n 's/^\(CONFIG_[A-Z0-9_]*\)=\(.*\)$/\1 \2/p' |
		while read -r sym val; do
			have=$(sed -n "s/^$sym=//p" "$OBJ/.config")
			if [ "$val" = n ]; then
				[ -z "$have" ] || echo "$sym=n (is $have)"
			elif [ "$have" != "$val" ]; then
				echo "$sym=$val (is ${have:-unset})"
			fi
		done)
	if [ -n "$dropped" ]; then
		echo "error: requested options not set after merging:" >&2
		printf '%s\n' "$dropped" | sed 's/^/  /' >&2
		rm -f "$OBJ/.config-hash"
		exit 1
	fi
	echo "$cfg_hash" >"$OBJ/.config-hash"
fi

log "building bzImage and modules in $OBJ"
mk -s bzImage modules
rm -rf "$OBJ/modinst"
mk -s INSTALL_MOD_PATH="$OBJ/modinst" INSTALL_MOD_STRIP=1 modules_install >/dev/null
mk -s INSTALL_HDR_PATH="$OBJ/usr" headers_install >/dev/null
ls -l "$OBJ/arch/x86/boot/bzImage" >&2
