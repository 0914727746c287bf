#!/bin/bash
# make check: the project's own tests.
#  1. series applies with git am on a new worktree of the base, and the
#     build tree holds its result
#  2. checkpatch.pl is clean on every patch
#  3. shellcheck is clean on the harness
#  4. the harness can fail (canned logs, a broken patch)
#  5. every C file the series changes compiles with W=1, no new warning
#  6. docs/callers.md matches the prepared tree (scripts/audit-callers.sh)
#  7. both kernels build (stock and patched, one after the other)
#  8. make qemu-test passes on the patched kernel, every regression row
#     (selftests/regressions) among its passes
#  9. A/B on SERIES=none (booted beside 8): every guard row fails, every
#     regression row passes
# 10. BASE=6.12: both 6.12 kernels build, series-6.12 is checkpatch clean,
#     every C file it changes compiles with W=1 (as in 5), every row of
#     selftests/guards-6.12 fails on stock 6.12 and passes with
#     series-6.12, every row of selftests/regressions-6.12 passes on both
set -u
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"
s=$TOP/scripts
failed=()
times=()
t_start=$(date +%s)
# CI stops a run at 90 min; warn well before the budget is gone.
budget_warn=${CHECK_WARN_SECONDS:-3600}
check() {
	local t0 rc=0
	t0=$(date +%s)
	stage "$@" || rc=$?
	[ "$rc" -eq 0 ] || failed+=("$1")
	times+=("$(printf '%-18s %6ss  %s' "$1" "$(($(date +%s) - t0))" \
		"$([ "$rc" -eq 0 ] && echo ok || echo FAILED)")")
}

# The time each stage took and the total, and a loud warning past the
# budget: every later check or base has to fit in CI's 90 minutes.
time_summary() {
	local total=$(($(date +%s) - t_start)) t
	echo "make check: time per stage"
	for t in "${times[@]}"; do echo "  $t"; done
	printf '  %-18s %6ss  (%dm%02ds)\n' total "$total" $((total / 60)) $((total % 60))
	if [ "$total" -gt "$budget_warn" ]; then
		echo "!!! make check took $((total / 60)) min, more than $((budget_warn / 60)) min:"
		echo "!!! CI stops at 90 min; find the stage that grew before adding more"
	fi
}

# git am of the series on a new worktree of the base; the build tree is
# not re-applied (that would touch every file the series changes and
# rebuild a third of the kernel) but must hold the same tree.
fresh_series() {
	local pt=$BUILD/tree-patched wt=$BUILD/apply-check base p rc=0
	SERIES='' "$s/prepare-tree.sh" || return 1
	base=$(cut -d' ' -f1 "$pt/.prepared")
	git -C "$pt" worktree remove -f "$wt" >/dev/null 2>&1
	rm -rf "$wt"
	git -C "$pt" worktree prune
	git -C "$pt" worktree add -q -f --detach "$wt" "$base" || return 1
	while read -r p; do
		case "$p" in '' | '#'*) continue ;; esac
		git -C "$wt" am -q --whitespace=nowarn "$PATCHES/$p" >"$wt.log" 2>&1 ||
			{ echo "${PATCHES#"$TOP"/}/$p does not apply with git am:"; sed 's/^/  /' "$wt.log"; rc=1; break; }
	done <"$SERIES_FILE"
	if [ "$rc" -eq 0 ] && [ "$(git -C "$wt" rev-parse 'HEAD^{tree}')" != "$(git -C "$pt" rev-parse 'HEAD^{tree}')" ]; then
		echo "$pt does not hold the series: remove $pt/.prepared and rerun"
		rc=1
	fi
	if [ "$rc" -eq 0 ] && ! git -C "$pt" diff --quiet HEAD; then
		echo "$pt has local changes: remove $pt/.prepared and rerun"
		rc=1
	fi
	[ "$rc" -eq 0 ] && echo "series: $(git -C "$wt" rev-list --count "$base..HEAD") patches applied with git am on $base"
	git -C "$pt" worktree remove -f "$wt" >/dev/null 2>&1
	rm -rf "$wt" "$wt.log"
	git -C "$pt" worktree prune
	return "$rc"
}

# checkpatch is strict on net/ and drivers/net/ by itself, and strict mode
# calls every use of an existing CamelCase enum value (9p's Connected) a
# CHECK: CAMELCASE is the one strict test left out.
# checkpatch [PATCHES SERIES_FILE TREE]: the base's patches, with its tree's
# checkpatch.pl (default: 6.1's).
checkpatch() {
	local dir=${1:-$PATCHES} list=${2:-$SERIES_FILE} tree=${3:-$BUILD/tree-patched}
	local p out rc=0
	while read -r p; do
		case "$p" in '' | '#'*) continue ;; esac
		out=$(cd "$tree" && perl scripts/checkpatch.pl -q --no-signoff \
			--ignore FILE_PATH_CHANGES,CAMELCASE "$dir/$p" 2>&1) ||
			{ echo "checkpatch: ${dir#"$TOP"/}/$p"; echo "$out" | head -30; rc=1; }
		grep -q '^Signed-off-by: ' "$dir/$p" ||
			{ echo "checkpatch: ${dir#"$TOP"/}/$p has no Signed-off-by"; rc=1; }
	done <"$list"
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

# rows_are RESULTS WANT LIST KERNEL: every row named in selftests/LIST has
# the result WANT in RESULTS/results.tsv.
rows_are() {
	local res=$1 want=$2 list=$3 kernel=$4 rc=0 g r t
	while read -r g; do
		r=$(awk -F '\t' -v g="$g" '$1 == g {print $2}' "$res/results.tsv")
		t=$(awk -F '\t' -v g="${g%%:*}" '$1 == g {print $2}' "$res/results.tsv")
		# A guard may crash or hang the kernel it fails on: its rows are
		# then missing, and the test's own row says CRASH or HANG.
		if [ -z "$r" ] && [ "$want" = FAIL ] && { [ "$t" = CRASH ] || [ "$t" = HANG ]; }; then
			r=FAIL
			echo "  $kernel: $g -> FAIL (${g%%:*}: $t)"
		else
			echo "  $kernel: $g -> ${r:-missing}"
		fi
		[ "$r" = "$want" ] || { echo "  $list row is not $want on the $kernel kernel: $g"; rc=1; }
	done < <(grep -v '^#' "$TOP/selftests/$list")
	return "$rc"
}

# list_tests LIST...: the tests (programs) whose rows selftests/LIST name.
list_tests() {
	local l
	for l in "$@"; do grep -v '^#' "$TOP/selftests/$l"; done | sed 's/:.*//' | sort -u | tr '\n' ' '
}

# Both kernels, one after the other: each build wants both cores.
build_kernels() {
	local v sv
	for v in patched none; do
		sv=$v
		[ "$v" = patched ] && sv=
		SERIES=$sv stage "prepare-$v" "$s/prepare-tree.sh" || return 1
		SERIES=$sv stage "build-$v" "$s/build-kernel.sh" || return 1
	done
}

res_p=$BUILD/results/check-patched res_s=$BUILD/results/check-stock stock_pid=

# The whole suite on the patched kernel; a regression row must not be
# missing from it either. The stock guest boots beside it: both mostly
# wait on the throttled disks, and the stock run (guards and regressions
# only, about 2 min) then costs no time of its own.
patched_passes() {
	local rc=0
	rm -rf "$res_p" "$res_s" "$res_s.log"
	mkdir -p "$BUILD/results"
	SERIES=none RESULTS=$res_s TESTS="$(list_tests guards regressions)" \
		"$s/qemu-test.sh" >"$res_s.log" 2>&1 &
	stock_pid=$!
	SERIES='' RESULTS=$res_p "$s/qemu-test.sh" || rc=1
	[ -f "$res_p/results.tsv" ] || { echo "no summary from the patched run"; return 1; }
	rows_are "$res_p" PASS regressions patched || rc=1
	return "$rc"
}

# Guards fail on stock (they guard a fix); regression tests pass there too
# (they guard a bug the series once brought in).
stock_ab() {
	local rc=0
	if [ -n "$stock_pid" ]; then
		wait "$stock_pid"
	else
		SERIES=none RESULTS=$res_s TESTS="$(list_tests guards regressions)" \
			"$s/qemu-test.sh" >"$res_s.log" 2>&1
	fi
	[ -f "$res_s/results.tsv" ] ||
		{ echo "no summary from the stock run:"; tail -20 "$res_s.log"; return 1; }
	rows_are "$res_s" FAIL guards stock || rc=1
	rows_are "$res_s" PASS regressions stock || rc=1
	return "$rc"
}

# BASE=6.12: its compile test, and its guards only, stock and patched
# booted side by side; the full 6.12 suite is make qemu-test BASE=6.12.
base_6_12() {
	local b=$BUILD/6.12/results rc=0 t ps v
	BASE=6.12 "$s/install-deps.sh" || return 1
	BASE=6.12 build_kernels || return 1
	checkpatch "$TOP/patches-6.12" "$TOP/series-6.12" "$BUILD/6.12/tree-patched" || return 1
	BASE=6.12 stage compile-test-6.12 "$s/compile-test.sh" || rc=1
	t=$(list_tests guards-6.12 regressions-6.12)
	rm -rf "$b/check-patched" "$b/check-stock"
	mkdir -p "$b"
	BASE=6.12 SERIES=none RESULTS=$b/check-stock TESTS="$t" \
		"$s/qemu-test.sh" >"$b/check-stock.log" 2>&1 &
	ps=$!
	BASE=6.12 SERIES='' RESULTS=$b/check-patched TESTS="$t" \
		"$s/qemu-test.sh" >"$b/check-patched.log" 2>&1
	wait "$ps"
	for v in patched stock; do
		[ -f "$b/check-$v/results.tsv" ] ||
			{ echo "no summary from the 6.12 $v run:"; tail -20 "$b/check-$v.log"; return 1; }
	done
	rows_are "$b/check-patched" PASS guards-6.12 patched-6.12 || rc=1
	rows_are "$b/check-stock" FAIL guards-6.12 stock-6.12 || rc=1
	rows_are "$b/check-patched" PASS regressions-6.12 patched-6.12 || rc=1
	rows_are "$b/check-stock" PASS regressions-6.12 stock-6.12 || rc=1
	return "$rc"
}

check apply-series fresh_series
check checkpatch checkpatch
check shellcheck shellcheck_all
check harness-selftests "$s/test-harness.sh"
check compile-test "$s/compile-test.sh"
check callers-audit "$s/audit-callers.sh" --check
check kernels build_kernels
check qemu-test patched_passes
check ab-stock stock_ab
check base-6.12 base_6_12

time_summary
n=${#times[@]}
if [ ${#failed[@]} -gt 0 ]; then
	echo "make check: FAILED: ${failed[*]}"
	echo "check: $((n - ${#failed[@]})) passed, ${#failed[@]} failed"
	exit 1
fi
echo "make check: all checks passed"
echo "check: $n passed, 0 failed"
