#!/bin/bash
# The harness must be able to fail: feed canned console logs to the
# summarizer and a broken patch to prepare-tree, and check each verdict.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
data=$top/scripts/testdata
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 passes=0

expect() { # NAME WANT_RC GREP_PATTERN CMD...
	local name=$1 want=$2 pat=$3 out rc
	shift 3
	out=$("$@" 2>&1)
	rc=$?
	if { [ "$want" = 0 ] && [ "$rc" -eq 0 ]; } || { [ "$want" != 0 ] && [ "$rc" -ne 0 ]; }; then
		if printf '%s\n' "$out" | grep -qE "$pat"; then
			echo "ok - $name"
			passes=$((passes + 1))
			return
		fi
	fi
	echo "FAIL - $name (exit $rc, wanted $want and /$pat/):"
	printf '%s\n' "$out" | sed 's/^/    /' | tail -15
	fails=$((fails + 1))
}

canned() { # LOG [timeout]
	local d=$tmp/$1${2:+-$2}
	mkdir -p "$d"
	cp "$data/$1.log" "$d/console.log"
	[ -n "${2:-}" ] && echo "timeout" >"$d/timeout"
	BASE=${CANNED_BASE:-6.1} "$top/scripts/summarize.sh" "$d"
}
# canned_on BASE LOG: the same with BASE's known-failure lists.
canned_on() { CANNED_BASE=$1 canned "$2"; }

expect "a clean run passes" 0 '^verdict: PASS' canned pass
expect "a skipped subtest is a SKIP row under its name" 0 \
	'^dio_fork: dio_fork_nfs_aio +SKIP .*no disk with serial dio-nfs' canned pass
expect "a failing selftest fails the run" 1 'dio_fork: dio_fork_blkdev_aio +FAIL .*lost 198/200' canned selftest-fails
expect "a WARN in the console fails the run" 1 '^  WARNING: CPU: 0 PID: 77' canned warn
expect "a known Debian splat is an XFAIL row" 0 '^known splat: hugetlb_split +XFAIL' canned known-splat
expect "the same site from another path fails" 1 '^  WARNING: CPU: 0 PID: 111' canned known-site-other-trace
expect "a leaked pin fails the run" 1 'foll_pin_balance +FAIL .*leaked 4 pins' canned pin-leak
expect "6.12's run_vmtests.sh rows are read" 1 '^run_vmtests: ./mremap_test +FAIL' canned vmtests-6.12
expect "BASE=6.12 reads its own known failures" 0 \
	'^run_vmtests: ./uffd-unit-tests +XFAIL' canned_on 6.12 vmtests-6.12-known
expect "6.1's list does not excuse a 6.12 failure" 1 \
	'^run_vmtests: ./uffd-unit-tests +FAIL' canned_on 6.1 vmtests-6.12-known
expect "a base without known-failure lists is named" 2 \
	'^error: no .*/selftests/known-failures-9.9 for BASE=9.9' canned_on 9.9 pass
expect "a hung guest is named" 1 '^dio_fork +HANG .*timed out in this test' canned hang timeout
expect "a guest that died is named" 1 '^dio_fork +CRASH' canned hang
expect "a wrong benchmark knob is named" 1 '^error: BENCH_VDA must be null or file' \
	env BUILD="$tmp/build" BENCH_VDA=disk "$top/scripts/bench.sh"
expect "a wrong profile device is named" 1 '^error: PROFILE_DEV must be nullb0 or vda' \
	env BUILD="$tmp/build" PROFILE_DEV=sda "$top/scripts/profile.sh"
# compile-test's batched W=1 build: each warning counted for its object.
expect "compile-test counts each object's warnings" 0 \
	'^block/bio.o 0 fs/fuse/dev.o 2 drivers/misc/genwqe/card_utils.o 1 mm/gup.o 0$' \
	bash -c "'$top/scripts/compile-test.sh' --count-warnings '$data/compile-w1.log' \
		block/bio.o fs/fuse/dev.o drivers/misc/genwqe/card_utils.o mm/gup.o | tr '\n' ' ' | sed 's/ $//'"
mkdir -p "$tmp/obj/block"
touch "$tmp/obj/block/bio.o"
expect "compile-test names an object that did not build" 0 '^block/bio.o 0 fs/fuse/dev.o error$' \
	bash -c "objdir='$tmp/obj' '$top/scripts/compile-test.sh' --count-warnings \
		'$data/compile-w1.log' block/bio.o fs/fuse/dev.o | tr '\n' ' ' | sed 's/ $//'"
expect "a wrong soak knob is named" 1 '^error: PIN_RACES_SECONDS must be a number' \
	env BUILD="$tmp/build" RESULTS="$tmp/r" PIN_RACES_SECONDS=1m "$top/scripts/run-qemu.sh"
expect "a wrong virtio-fs delay is named" 1 '^error: VFS_DELAY_MS must be milliseconds' \
	env BUILD="$tmp/build" VFS_DELAY_MS=3s "$top/scripts/virtiofs-export.sh" start "$tmp/vfs"
# The export's daemon: up with its socket, then gone with strace.
expect "virtiofsd starts and stops" 0 '^stopped$' \
	bash -c "sock=\$('$top/scripts/virtiofs-export.sh' start '$tmp/vfs') &&
		test -S \"\$sock\" && pid=\$(cat '$tmp/vfs/strace.pid') &&
		'$top/scripts/virtiofs-export.sh' stop '$tmp/vfs' &&
		! kill -0 \"\$pid\" 2>/dev/null && echo stopped"
expect "a wrong base is named" 2 '^error: BASE must be 6.1 or 6.12 \(got .5.10.\)' \
	env BUILD="$tmp/build" BASE=5.10 "$top/scripts/prepare-tree.sh"
# Each base keeps its own build directory, series and patch directory.
expect "BASE=6.12 has its own build directory and series" 0 '^/b/6.12 .*/series-6.12 .*/patches-6.12 mm$' \
	env BUILD=/b BASE=6.12 bash -c ". '$top/scripts/common.sh' && echo \"\$BUILD \$SERIES_FILE \$PATCHES \$KSFT_MM\""
mkdir -p "$tmp/busy"
expect "a second run on a tree in use is refused" 1 \
	'another run is using .*/tree-patched' \
	bash -c "exec 8>'$tmp/busy/tree-patched.lock' && flock -s 8 &&
		BUILD='$tmp/busy' '$top/scripts/prepare-tree.sh'"

# A patch that no longer applies: a scratch project on a tiny base repo.
mkdir -p "$tmp/src" "$tmp/proj/patches" "$tmp/proj/scripts"
(cd "$tmp/src" && git init -q -b main && printf 'one\ntwo\nthree\n' >f &&
	git add f && git -c user.name=t -c user.email=t@t commit -qm base)
cat >"$tmp/proj/patches/0001-bad.patch" <<'P'
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Test <t@t>
Date: Mon, 1 Jan 2024 00:00:00 +0000
Subject: [PATCH] change a line that is not there

---
 f | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/f b/f
--- a/f
+++ b/f
@@ -1,3 +1,3 @@
 one
-deux
+2
 three
P
echo 0001-bad.patch >"$tmp/proj/series"
cp "$top"/scripts/{common.sh,prepare-tree.sh} "$tmp/proj/scripts/"
expect "a patch that does not apply is named" 1 \
	'patch does not apply: patches/0001-bad.patch' \
	env TOP="$tmp/proj" BUILD="$tmp/proj/build" LINUX_SRC="$tmp/src" SERIES= \
	"$tmp/proj/scripts/prepare-tree.sh"
expect "the user's checkout is left untouched" 0 '^untouched$' \
	bash -c "cd '$tmp/src' && [ -z \"\$(git status --porcelain)\" ] &&
		[ \"\$(git rev-parse --abbrev-ref HEAD)\" = main ] && echo untouched"

echo "harness: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
