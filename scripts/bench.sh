#!/bin/bash
# make bench: fio IOPS of the stock and the patched kernel, measured in the
# same invocation, alternating boots, ROUNDS rounds (default 3). Prints
# per case the median IOPS of each kernel, the patched/stock ratio of the
# medians and the lowest and highest per-round ratio.
# scripts/bench.sh --table DIR prints the table of an earlier run again.
#
# BENCH_CLOCK=icount (default): QEMU runs with -icount shift=0, so the
# guest clock counts executed instructions (1 ns each) and fio's IOPS no
# longer depend on how busy the host is; on null_blk they then measure the
# CPU cost of the I/O path, which is what pinning changes. BENCH_CLOCK=wall
# measures host wall-clock time instead (noisy under TCG).
set -u -o pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"
s=$TOP/scripts
rounds=${ROUNDS:-3}
clock=${BENCH_CLOCK:-icount}
case "$clock" in
icount) extra="-icount shift=0,align=off,sleep=on" ;;
wall) extra= ;;
*) die "BENCH_CLOCK must be icount or wall, not '$clock'" ;;
esac
# BENCH_VDA=null (default): the virtio disk is backed by QEMU's null-co
# driver, which answers at once without a host file; the guest's
# virtio-blk path is measured, not the host's page cache and thread pool.
# BENCH_VDA=file backs it with an image file as the suite does.
vda=${BENCH_VDA:-null}
case "$vda" in
null | file) ;;
*) die "BENCH_VDA must be null or file, not '$vda'" ;;
esac
# BENCH_OPT=O2 (default): both kernels at -O2, as Debian builds its
# kernel; at tinyconfig's -Os small inline helpers of the pin and unpin
# paths become calls, which inflates what a pin costs. BENCH_OPT=Os
# measures the suite's own kernels.
opt=${BENCH_OPT:-O2}
case "$opt" in
O2) export O2=1; suffix=-o2 ;;
Os) export O2=; suffix= ;;
*) die "BENCH_OPT must be O2 or Os, not '$opt'" ;;
esac

table() {

	local out=$1
	{
		echo "fio 4 KiB O_DIRECT, $(cut -d' ' -f2 "$out/raw.txt" | sort -u | wc -l) rounds, $(cat "$out/date"), $(nproc) CPUs, accel $(cat "$BUILD/accel" 2>/dev/null), clock $(cat "$out/clock" 2>/dev/null || echo wall), -$(cat "$out/opt" 2>/dev/null || echo Os), vda $(cat "$out/vda" 2>/dev/null || echo file)"
		echo "base: $(cat "$BUILD/tree-patched/.base-desc")"
		awk '
		function median(a, n,   i, j, t) {
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
				if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		{ k = $3 " " $4 " " $5 " " $6; iops[$1, k, $2] = $7; keys[k] = 1; if ($2 > R) R = $2 }
		END {
			printf "%-34s %10s %10s %7s %13s\n", "case (dev rw engine depth)", "stock", "patched", "ratio", "round range"
			for (k in keys) {
				lo = 1e9; hi = 0
				for (r = 1; r <= R; r++) {
					s[r] = iops["none", k, r]; p[r] = iops["patched", k, r]
					q = s[r] > 0 ? p[r] / s[r] : 0
					if (q < lo) lo = q; if (q > hi) hi = q
				}
				ms = median(s, R); mp = median(p, R)
				printf "%-34s %10d %10d %7.3f %6.3f-%.3f\n", k, ms, mp, (ms > 0 ? mp / ms : 0), lo, hi
			}
		}' "$out/raw.txt" | sort
	} | tee "$out/table.txt"
}

if [ "${1:-}" = --table ]; then
	table "${2:?usage: bench.sh --table DIR}"
	exit
fi

out=$BUILD/bench/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
date -u +%Y-%m-%d >"$out/date"
echo "$clock" >"$out/clock"
echo "$opt" >"$out/opt"
echo "$vda" >"$out/vda"
bench_kernels || exit 1
for r in $(seq "$rounds"); do
	for v in none patched; do
		sv=$v
		[ "$v" = patched ] && sv=
		SERIES=$sv MODE=bench DISK_IOPS=0 RAW_DISK=$vda RESULTS=$out/$v-$r QEMU_EXTRA=$extra \
			INITRD=$BUILD/obj-$v$suffix/initramfs-bench.cpio.gz TIMEOUT=900 \
			stage "bench-$v-round-$r" "$s/run-qemu.sh" || exit 1
		grep -q '^# END OF BENCH' "$out/$v-$r/console.log" ||
			die "bench guest did not finish: $out/$v-$r/console.log"
		tr -d '\r' <"$out/$v-$r/console.log" | awk -v v="$v" -v r="$r" \
			'$1 == "BENCH" {print v, r, $2, $3, $4, $5, $6}' >>"$out/raw.txt"
	done
done

table "$out"
