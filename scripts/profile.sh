#!/bin/bash
# make profile: where a 4 KiB O_DIRECT I/O spends its kernel instructions,
# stock against patched, per function. The -O2 kernels of
# make bench boot under QEMU with scripts/insn-count.c, a TCG plugin that
# counts the instructions executed in kernel text, per function, and
# all the others (fio, libraries, modules) in one sum while fio runs (the
# guest marks the window with sethostname()). Each kernel boots twice,
# with PROFILE_IOS I/Os and with a few (PROFILE_BASE): the difference of
# the two counts over the difference of the I/Os is the cost of one I/O,
# without fio's start-up and exit.
#
# PROFILE_CASE="randread io_uring" (fio rw and ioengine, iodepth 1),
# PROFILE_DEV=nullb0 (null_blk) or vda (virtio-blk on QEMU's null-co: the
# case make bench cannot judge at depth 1, whose instructions this counts),
# PROFILE_IOS=50000, PROFILE_BASE=1000, PROFILE_TOP=30 functions shown.
# scripts/profile.sh --table DIR prints the table of an earlier run again.
set -u -o pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"
s=$TOP/scripts
export O2=1

read -r rw engine extra <<<"${PROFILE_CASE:-randread io_uring}"
case "$rw" in randread | randwrite | read | write) ;;
*) die "PROFILE_CASE: fio rw must be randread, randwrite, read or write, not '$rw'" ;;
esac
case "$engine" in io_uring | libaio | psync) ;;
*) die "PROFILE_CASE: ioengine must be io_uring, libaio or psync, not '${engine:-}'" ;;
esac
[ -z "$extra" ] || die "PROFILE_CASE takes two words (rw ioengine), not '$PROFILE_CASE'"
dev=${PROFILE_DEV:-nullb0}
case "$dev" in
nullb0) devname=null_blk ;;
vda) devname="virtio-blk (null-co)" ;;
*) die "PROFILE_DEV must be nullb0 or vda, not '$dev'" ;;
esac
ios=${PROFILE_IOS:-50000}
base=${PROFILE_BASE:-1000}
top=${PROFILE_TOP:-30}
for n in "$ios" "$base" "$top"; do
	case "$n" in '' | *[!0-9]*) die "PROFILE_IOS, PROFILE_BASE and PROFILE_TOP are counts, not '$n'" ;; esac
done
[ "$ios" -gt "$base" ] || die "PROFILE_IOS ($ios) must exceed PROFILE_BASE ($base)"

# fold COUNTS SYMS: "function instructions" for every function that ran.
# Both files are sorted by address, written as 16 lowercase hex digits,
# so string order is address order.
fold() {
	awk 'NR == FNR { a[NR] = $1; f[NR] = $3; n = NR; next }
	{
		while (i < n && a[i + 1] <= $1) i++
		sum[i ? f[i] : "?"] += $2
	}
	END { for (k in sum) print k, sum[k] }' "$2" "$1"
}

# The row of the instructions outside kernel text (fio, the C library,
# modules such as null_blk): one name, no spaces, as fold writes them.
other='[user-space+modules]'

table() {
	local out=$1
	{
		echo "instructions per 4 KiB O_DIRECT I/O (kernel text by function, then the rest) on $(cat "$out/dev" 2>/dev/null || echo null_blk), fio $(cat "$out/case"), iodepth 1, $(cat "$out/date"), -O2 kernels, TCG with -icount"
		echo "base: $(cat "$BUILD/tree-patched/.base-desc" 2>/dev/null)"
		awk -v total="$out/total" -v other="$other" '
		FNR == 1 { file++ }
		{ c[file, $1] = $2; names[$1] = 1 }
		END {
			# files: none-ios, none-base, patched-ios, patched-base, ios
			n0 = c[5, "none"]; p0 = c[5, "patched"]
			for (k in names) {
				s = (c[1, k] - c[2, k]) / n0; p = (c[3, k] - c[4, k]) / p0
				if (k == other) { os = s; op = p; continue }
				ts += s; tp += p
				if (s > -0.5 && s < 0.5 && p > -0.5 && p < 0.5) continue
				printf "%-40s %9.1f %9.1f %+8.1f\n", k, s, p, p - s
			}
			printf "%-40s %9.1f %9.1f %+8.1f\n", "= all kernel text", ts, tp, tp - ts > total
			if (other in names) {
				printf "%-40s %9.1f %9.1f %+8.1f\n", other, os, op, op - os > total
				printf "%-40s %9.1f %9.1f %+8.1f  stock/patched %.4f\n", "= all guest instructions",
					ts + os, tp + op, tp + op - ts - os, (ts + os) / (tp + op) > total
			}
		}' "$out/none-$(cat "$out/ios").funcs" "$out/none-$(cat "$out/base").funcs" \
			"$out/patched-$(cat "$out/ios").funcs" "$out/patched-$(cat "$out/base").funcs" \
			"$out/done" |
			awk '{ d = $4 < 0 ? -$4 : $4; print d, $0 }' | sort -k1,1gr | head -n "$top" |
			cut -d' ' -f2- >"$out/top"
		printf "%-40s %9s %9s %8s\n" "function" "stock" "patched" "diff"
		cat "$out/top" "$out/total"
	} | tee "$out/table.txt"
}

if [ "${1:-}" = --table ]; then
	table "${2:?usage: profile.sh --table DIR}"
	exit
fi

so=$BUILD/insn-count.so
if [ ! -f "$so" ] || [ "$s/insn-count.c" -nt "$so" ]; then
	gcc -O2 -Wall -Wextra -shared -fPIC -o "$so" "$s/insn-count.c" ||
		die "cannot build the QEMU plugin scripts/insn-count.c"
fi

out=$BUILD/profile/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
date -u +%Y-%m-%d >"$out/date"
echo "$rw $engine" >"$out/case"
echo "$devname" >"$out/dev"
echo "$ios" >"$out/ios"
echo "$base" >"$out/base"
bench_kernels || exit 1
: >"$out/done"
# profile_boot VARIANT IOS: boot with the plugin, fold its counts into
# functions ($out/VARIANT-IOS.funcs), print how many I/Os fio completed.
profile_boot() {
	local v=$1 n=$2 sv=$1 r=$out/$1-$2 did mark
	[ "$v" = patched ] && sv=
	mark=$(awk '$3 == "__x64_sys_sethostname" {print $1}' "$out/$v.syms")
	[ -n "$mark" ] || die "no __x64_sys_sethostname in $BUILD/obj-$v-o2/vmlinux"
	SERIES=$sv MODE=profile DISK_IOPS=0 RAW_DISK=null RESULTS=$r TESTS="$rw $engine $n $dev" \
		QEMU_EXTRA="-icount shift=0,align=off,sleep=on -plugin $so,out=$r/counts,mark=$mark" \
		INITRD=$BUILD/obj-$v-o2/initramfs-bench.cpio.gz TIMEOUT=900 \
		stage "profile-$v-$n-ios" "$s/run-qemu.sh" || return 1
	grep -q '^# END OF PROFILE' "$r/console.log" ||
		die "profile guest did not finish: $r/console.log"
	! grep -a 'PROFILE-ERROR' "$r/console.log" >&2 ||
		die "the guest could not run fio: $r/console.log"
	did=$(tr -d '\r' <"$r/console.log" | awk '$1 == "PROFILE" && $2 == "ios" {print $3}')
	[ "${did:-0}" -gt 0 ] || die "fio completed no I/O: $r/console.log"
	[ -s "$r/counts" ] || die "the plugin wrote no counts: $r/qemu.stderr"
	! grep 'insn-count:' "$r/qemu.stderr" >&2 || die "the count window is wrong: $r/qemu.stderr"
	fold "$r/counts" "$out/$v.syms" >"$out/$v-$n.funcs"
	[ -s "$r/counts.other" ] || die "the plugin wrote no user-space count: $r/qemu.stderr"
	echo "$other $(cat "$r/counts.other")" >>"$out/$v-$n.funcs"
	echo "$did"
}
for v in none patched; do
	nm -n "$BUILD/obj-$v-o2/vmlinux" | awk '$2 ~ /^[tTwW]$/' >"$out/$v.syms" ||
		die "no symbols in $BUILD/obj-$v-o2/vmlinux"
	many=$(profile_boot "$v" "$ios") || exit 1
	few=$(profile_boot "$v" "$base") || exit 1
	echo "$v $((many - few))" >>"$out/done"
done
table "$out"
