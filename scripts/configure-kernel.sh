#!/bin/bash
# Write $OBJ/.config: a base target (tinyconfig or a defconfig) plus kconfig
# fragments merged with the tree's merge_config.sh, then check that every
# requested option really is set: merge_config silently drops options whose
# dependencies are unmet. Skipped when base and fragments are unchanged.
# Usage: configure-kernel.sh OBJ BASE FRAGMENT...; ARCH, CROSS_COMPILE and
# CC come from the environment.
set -eu
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"

obj=${1:?usage: configure-kernel.sh OBJ BASE FRAGMENT...}
base=${2:?usage: configure-kernel.sh OBJ BASE FRAGMENT...}
shift 2
mkdir -p "$obj"
mk() {
	make -C "$TREE" O="$obj" ${ARCH:+ARCH="$ARCH"} ${CROSS_COMPILE:+CROSS_COMPILE="$CROSS_COMPILE"} \
		${CC:+CC="$CC"} "$@"
}

cfg_hash=$( (echo "$base ${ARCH:-}"; cat "$@") | sha256sum | cut -c1-16)
if [ "$(cat "$obj/.config-hash" 2>/dev/null)" = "$cfg_hash" ] && [ -f "$obj/.config" ]; then
	exit 0
fi
log "configuring $obj: $base + $(for f; do printf '%s ' "${f##*/}"; done)"
mk -s "$base" >/dev/null
(cd "$TREE" && scripts/kconfig/merge_config.sh -m -O "$obj" "$obj/.config" "$@") \
	>"$obj/merge_config.log" 2>&1 || die "merge_config.sh failed, see $obj/merge_config.log"
mk -s olddefconfig >/dev/null
dropped=$(cat "$@" | sed -n 's/^\(CONFIG_[A-Z0-9_]*\)=\(.*\)$/\1 \2/p' |
	while read -r sym val; do
		have=$(sed -n "s/^$sym=//p" "$obj/.config")
		if [ "$val" = n ]; then
			[ -z "$have" ] || echo "$sym=n (is $have)"
		elif [ "$have" != "$val" ]; then
			echo "$sym=$val (is ${have:-unset})"
		fi
	done)
if [ -n "$dropped" ]; then
	echo "error: requested options not set after merging:" >&2
	printf '%s\n' "$dropped" | sed 's/^/  /' >&2
	rm -f "$obj/.config-hash"
	exit 1
fi
echo "$cfg_hash" >"$obj/.config-hash"
