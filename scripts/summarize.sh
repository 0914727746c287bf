#!/bin/bash
# Read a run's console log and decide: one row per test (the suite's own
# KTAP lines, and each run_vmtests.sh test), a hung or crashed guest, and
# any kernel splat. Writes results.ktap and summary.txt into the results
# directory, prints the summary and exits 0 only if everything passed.
# Usage: summarize.sh RESULTS_DIR
set -eu
res=${1:?usage: summarize.sh RESULTS_DIR}
top=$(cd "$(dirname "$0")/.." && pwd)
log=$res/console.log
[ -f "$log" ] || { echo "error: no console log in $res" >&2; exit 2; }
# Each base has its own lists (6.1: no suffix), as it has its own series.
case "${BASE:-6.1}" in
6.1) sfx= ;;
*) sfx=-$BASE ;;
esac
known=${KNOWN_FAILURES:-$top/selftests/known-failures$sfx}
known_splats=${KNOWN_SPLATS:-$top/selftests/known-splats$sfx}
for f in "$known" "$known_splats"; do
	[ -r "$f" ] || { echo "error: no $f for BASE=${BASE:-6.1}" >&2; exit 2; }
done

# Console lines without the carriage returns of the serial line.
tr -d '\r' <"$log" >"$res/console.txt"
sed -n '/^KTAP version 1/,/^# END OF SUITE/p' "$res/console.txt" >"$res/results.ktap"

awk -v known="$known" -v tsv="$res/results.tsv" -v timedout="$([ -f "$res/timeout" ] && echo 1)" '
BEGIN {
	FS = "\t"
	while ((getline line < known) > 0) {
		if (line ~ /^#/ || line == "") continue
		split(line, kf, "\t"); xfail[kf[1]] = kf[2]
	}
	FS = " "
}
function row(name, result, secs, note) {
	if ((result == "FAIL") && (name in xfail)) {
		result = "XFAIL"; note = xfail[name]
	}
	if (index(name, ": ")) has_sub[substr(name, 1, index(name, ": ") - 1)] = 1
	n++; names[n] = name; results[n] = result; times[n] = secs; notes[n] = note
	if (result == "FAIL" || result == "HANG" || result == "CRASH") bad++
	if (result == "FAIL" && index(name, ": ")) sub_fail[substr(name, 1, index(name, ": ") - 1)]++
}
/^# START / { cur = substr($0, 9); started[cur] = 1; vmcmd = ""; next }
/^# END OF SUITE/ { ended = 1; next }
# run_vmtests.sh announces "running CMD" and ends each with [PASS] etc.;
# on 6.12 it prints both as TAP comments ("# running CMD", "# [PASS]").
cur == "run_vmtests" && /^    (# )?running / {
	vmcmd = $0; sub(/^    (# )?running /, "", vmcmd); next
}
cur == "run_vmtests" && vmcmd != "" && /^    (# )?\[(PASS|FAIL|SKIP)\]$/ {
	r = $0; sub(/^    (# )?\[/, "", r); r = substr(r, 1, 4)
	row("run_vmtests: " vmcmd, r, "-", "")
	vmcmd = ""; next
}
# A kselftest program'"'"'s own results, one level down.
# (run_vmtests.sh is judged by its own markers above, not by the KTAP of
# the programs it runs.)
cur != "" && cur != "run_vmtests" && /^    (not )?ok [0-9]+ / {
	sub(/^    /, "")
	notok = ($1 == "not")
	line = $0
	sub(/^(not )?ok [0-9]+ /, "", line)
	note = ""
	# ksft_test_result_skip() writes "ok N # SKIP name: reason".
	if (line ~ /^# SKIP /) {
		sub(/^# SKIP /, "", line)
		note = "SKIP"
		if (match(line, /: /)) { note = "SKIP " substr(line, RSTART + 2); line = substr(line, 1, RSTART - 1) }
	}
	if (match(line, / # .*/)) { note = substr(line, RSTART + 3); line = substr(line, 1, RSTART - 1) }
	if (match(line, / \(.*\)$/)) { note = substr(line, RSTART + 2, RLENGTH - 3) (note == "" ? "" : "; " note); line = substr(line, 1, RSTART - 1) }
	result = notok ? "FAIL" : (note ~ /^SKIP/ ? "SKIP" : "PASS")
	row(cur ": " line, result, "-", note)
	next
}
/^(not )?ok [0-9]+ / {
	notok = ($1 == "not")
	name = notok ? $4 : $3
	secs = "-"; note = ""
	if (match($0, /time=[0-9]+s/)) secs = substr($0, RSTART + 5, RLENGTH - 6)
	if (match($0, / # .*/)) {
		note = substr($0, RSTART + 3)
		sub(/ *# *time=[0-9]+s/, "", note)
		sub(/time=[0-9]+s/, "", note)
	}
	result = notok ? "FAIL" : (note ~ /^SKIP/ ? "SKIP" : "PASS")
	# run_vmtests.sh fails when one of its tests does: judge it by them.
	if (notok && (name in has_sub) && !(name in sub_fail)) {
		result = "XFAIL"; note = "only known failures inside"
	}
	row(name, result, secs, note)
	done_[name] = 1; cur = ""
	next
}
END {
	if (!ended) {
		what = timedout ? "HANG" : "CRASH"
		why = timedout ? "guest timed out in this test" : "guest stopped before the suite ended"
		if (cur == "") { cur = "(boot)"; why = timedout ? "guest timed out before the suite started" : "guest never reached the suite" }
		row(cur, what, "-", why)
	}
	printf "%-58s %-6s %6s  %s\n", "TEST", "RESULT", "SECS", "NOTE"
	for (i = 1; i <= n; i++)
		printf "%-58s %-6s %6s  %s\n", names[i], results[i], times[i], notes[i]
	for (i = 1; i <= n; i++)
		printf "%s\t%s\t%s\t%s\n", names[i], results[i], times[i], notes[i] > tsv
	exit bad ? 1 : 0
}' "$res/console.txt" >"$res/summary.txt" && ok=1 || ok=0

# Kernel splats fail the run even when every test passed. A WARNING that
# selftests/known-splats describes (its site and a function of its call
# trace) is a bug of Debian's tree, shown on SERIES=none too: it becomes an
# XFAIL row with its reason, so that any other splat still stands out.
pat='BUG:|WARNING:|Oops|KASAN|refcount_t:|list_del corruption|Kernel panic|INFO: task .* blocked'
awk -v pat="$pat" -v known="$known_splats" -v out="$res/splats.txt" \
	-v tsv="$res/results.tsv" -v sum="$res/summary.txt" '
BEGIN {
	FS = "\t"
	while ((getline line < known) > 0) {
		if (line ~ /^#/ || line == "") continue
		split(line, f, "\t")
		k++; site[k] = f[1]; fn[k] = f[2]; why[k] = f[3]
	}
	printf "" > out
}
{ l[NR] = $0 }
END {
	for (i = 1; i <= NR; i++) {
		if (l[i] !~ pat) continue
		hit = 0
		for (j = 1; j <= k && !hit; j++) {
			if (l[i] !~ /WARNING:/ || l[i] !~ site[j]) continue
			for (t = i + 1; t <= NR && t < i + 80; t++) {
				if (l[t] ~ /end trace/) break
				if (index(l[t], " " fn[j] "+")) { hit = j; break }
			}
		}
		if (!hit) { print l[i] > out; continue }
		seen[hit]++
	}
	for (j = 1; j <= k; j++) {
		if (!seen[j]) continue
		name = "known splat: " fn[j]
		note = seen[j] " warning(s), call trace through " fn[j] "(); " why[j]
		printf "%-58s %-6s %6s  %s\n", name, "XFAIL", "-", note >> sum
		printf "%s\t%s\t%s\t%s\n", name, "XFAIL", "-", note >> tsv
	}
}' "$res/console.txt"
[ -s "$res/splats.txt" ] && ok=0

{
	cat "$res/summary.txt"
	echo
	[ -f "$res/base" ] && echo "base:    $(cat "$res/base")"
	[ -f "$res/applied" ] && echo "applied: $(wc -l <"$res/applied") patches (list in $res/applied)"
	[ -f "$res/accel" ] && echo "accel:   $(cat "$res/accel")"
	[ -f "$res/boot-seconds" ] && echo "boot to verdict: $(cat "$res/boot-seconds")s"
	if [ -s "$res/splats.txt" ]; then
		echo "kernel splats in the console log ($(wc -l <"$res/splats.txt")):"
		sed 's/^/  /' "$res/splats.txt" | head -20
	fi
	pass=$(grep -c ' PASS ' "$res/summary.txt" || true)
	fail=$(grep -cE ' (FAIL|HANG|CRASH) ' "$res/summary.txt" || true)
	skip=$(grep -cE ' (SKIP|XFAIL) ' "$res/summary.txt" || true)
	echo "verdict: $([ "$ok" = 1 ] && echo PASS || echo FAIL) ($res)"
	echo "$pass passed, $fail failed, $skip skipped"
} | tee "$res/verdict.txt"
[ "$ok" = 1 ]
