#!/bin/bash
# make check: the project's own tests.
#  1. series applies with git am on a freshly prepared tree
#  2. checkpatch.pl is clean on every patch
#  3. shellcheck is clean on the harness
#  4. the harness can fail (canned logs, a broken patch)
#  5. every C file the series changes compiles with W=1, no new warning
#  6. docs/callers.md matches the prepared tree (scripts/audit-callers.sh)
#  7. make qemu-test passes on the patched kernel
#  8. A/B: every guard test fails on SERIES=none
set -u
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"
s=$TOP/scripts
failed=()
check() {
	stage "$@" || failed+=("$1")
}

fresh_series() {
	rm -f "$BUILD/tree-patched/.prepared"
	SERIES='' "$s/prepare-tree.sh"
}

checkpatch() {
	local p out rc=0
	while read -r p; do
		case "$p" in '' | '#'*) continue ;; esac
		out=$(cd "$BUILD/tree-patched" && perl scripts/checkpatch.pl -q --no-signoff \
			--ignore FILE_PATH_CHANGES "$TOP/patches/$p" 2>&1) ||
			{ echo "checkpatch: patches/$p"; echo "$out" | head -30; rc=1; }
		grep -q '^Signed-off-by: ' "$TOP/patches/$p" ||
			{ echo "checkpatch: patches/$p has no Signed-off-by"; rc=1; }
	done <"$TOP/series"
	return "$rc"
}

shellcheck_all() {
	local f guest=()
	# Every script of the guest, found by its #! line so a new one is not
	# missed (initramfs/suite is a list, not a script).
	for f in "$TOP"/initramfs/*; do
		[ "$(head -c2 "$f")" = '#!' ] && guest+=("initramfs/${f##*/}")
	done
	(cd "$TOP" && shellcheck -x scripts/*.sh scripts/qemu-x86_64.conf "${guest[@]}" .ci/run)
}

stock_fails_guards() {
	local res=$BUILD/results/check-stock rc=0 g r
	rm -rf "$res"
	SERIES=none RESULTS=$res TESTS="$(guard_tests)" "$s/qemu-test.sh" >/dev/null
	[ -f "$res/results.tsv" ] || { echo "no summary from the stock run"; return 1; }
	while read -r g; do
		r=$(awk -F '\t' -v g="$g" '$1 == g {print $2}' "$res/results.tsv")
		echo "  stock: $g -> ${r:-missing}"
		[ "$r" = FAIL ] || { echo "  guard test does not fail on the stock kernel: $g"; rc=1; }
	done < <(grep -v '^#' "$TOP/selftests/guards")
	return "$rc"
}

guard_tests() {
	grep -v '^#' "$TOP/selftests/guards" | sed 's/:.*//' | sort -u | tr '\n' ' '
}

check apply-series fresh_series
check checkpatch checkpatch
check shellcheck shellcheck_all
check harness-selftests "$s/test-harness.sh"
check compile-test "$s/compile-test.sh"
check callers-audit "$s/audit-callers.sh" --check
check qemu-test env SERIES= RESULTS="$BUILD/results/check-patched" "$s/qemu-test.sh"
check ab-stock-fails stock_fails_guards

if [ ${#failed[@]} -gt 0 ]; then
	echo "make check: FAILED: ${failed[*]}"
	echo "check: $((8 - ${#failed[@]})) passed, ${#failed[@]} failed"
	exit 1
fi
echo "make check: all checks passed"
echo "check: 8 passed, 0 failed"
