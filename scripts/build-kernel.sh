#!/bin/bash
# Configure (tinyconfig + configs/ fragments) and build the kernel of one
# variant in $OBJ (common.sh: inside the tree, build/obj-<kind> links to
# it), plus modules and the exported uapi headers.
set -eu
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"
lock_tree s

[ -f "$TREE/.prepared" ] || die "$TREE is not prepared: run scripts/prepare-tree.sh"
mkdir -p "$OBJ"
# build/obj-<kind> was the object directory itself before the objects
# moved into the tree; it is now a symlink.
if [ -d "$OBJ_LINK" ] && [ ! -L "$OBJ_LINK" ]; then
	log "removing $OBJ_LINK (old layout: objects are now in $OBJ)"
	rm -rf "$OBJ_LINK"
fi
ln -sfn "${OBJ#"$BUILD"/}" "$OBJ_LINK"

frags=("$TOP/configs/base.config" "$TOP/configs/tests.config"
	"$TREE/tools/testing/selftests/$KSFT_MM/config")
# A base's own options (configs/6.12.config).
[ -f "$TOP/configs/$BASE.config" ] && frags+=("$TOP/configs/$BASE.config")
if [ -n "$DEBUG" ] && [ "$DEBUG" != 0 ]; then
	frags+=("$TOP/configs/debug.config")
fi
if [ -n "$O2" ] && [ "$O2" != 0 ]; then
	frags+=("$TOP/configs/o2.config")
fi

cc=gcc
command -v ccache >/dev/null 2>&1 && cc="ccache gcc"
# Fixed build identity so ccache hits across variants and reruns.
export KBUILD_BUILD_TIMESTAMP="${KBUILD_BUILD_TIMESTAMP:-2023-01-01}"
export KBUILD_BUILD_USER=foll-pin KBUILD_BUILD_HOST=qemu
mk() { make -C "$TREE" O="$OBJ" CC="$cc" -j"$(nproc)" "$@"; }

CC=$cc "$TOP/scripts/configure-kernel.sh" "$OBJ" tinyconfig "${frags[@]}" || exit 1

log "building bzImage and modules in $OBJ"
mk -s bzImage modules
rm -rf "$OBJ/modinst"
mk -s INSTALL_MOD_PATH="$OBJ/modinst" INSTALL_MOD_STRIP=1 modules_install >/dev/null
mk -s INSTALL_HDR_PATH="$OBJ/usr" headers_install >/dev/null
ls -l "$OBJ/arch/x86/boot/bzImage" >&2
