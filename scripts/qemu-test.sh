#!/bin/bash
# The main job: prepare the tree, build kernel and initramfs, boot the
# suite in QEMU and summarize, with a results directory per run.
set -u
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"
s=$TOP/scripts

stage prepare-tree "$s/prepare-tree.sh" || exit 1
stage build-kernel "$s/build-kernel.sh" || exit 1
stage build-initramfs "$s/build-initramfs.sh" || exit 1

kind=$VARIANT
[ "$OBJ" != "${OBJ%-debug}" ] && kind=$VARIANT-debug
RESULTS=${RESULTS:-$BUILD/results/$(date +%Y%m%d-%H%M%S)-$kind}
export RESULTS
mkdir -p "$RESULTS"
cp "$TREE/.base-desc" "$RESULTS/base"
cp "$TREE/.applied" "$RESULTS/applied"
echo "${TESTS:-all}" >"$RESULTS/tests"
t0=$(date +%s)
stage run-qemu "$s/run-qemu.sh" || exit 1
echo $(($(date +%s) - t0)) >"$RESULTS/boot-seconds"
ln -sfn "$RESULTS" "$BUILD/results/latest-$kind"
"$s/summarize.sh" "$RESULTS"
