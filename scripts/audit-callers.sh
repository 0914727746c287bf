#!/bin/bash
# Caller audit: every call of the get_user_pages / pin_user_pages family
# and of iov_iter_get_pages2 / iov_iter_get_pages_alloc2 /
# iov_iter_extract_pages in the prepared patched tree, named by file,
# enclosing function and API, joined with the hand-kept docs/callers.tsv
# (case, status, reason) and written to docs/callers.md.
#
# "converted" is computed, not typed: the same file and function call a
# get_* / iov_iter_get_pages* API in the stock tree and a pin_* /
# iov_iter_extract_pages API in the patched tree. A row written for the
# stock API keeps matching once a patch converts that function, so the
# audit follows new conversion patches without an edit of the data file.
#
# Fails, naming them, when the tree has a call with no row in
# docs/callers.tsv or a row matches no call.
#
# Usage: scripts/audit-callers.sh [--check]
#   --check   do not write; fail if docs/callers.md is not what the script
#             would write
#   STOCK_TREE, PATCHED_TREE   trees to compare (default build/tree-none,
#             build/tree-patched)
set -eu
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"
export LC_ALL=C

check=
case "${1:-}" in
--check) check=1 ;;
'') ;;
*) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

STOCK_TREE=${STOCK_TREE:-$BUILD/tree-none}
PATCHED_TREE=${PATCHED_TREE:-$BUILD/tree-patched}
tsv=$TOP/docs/callers.tsv
md=$TOP/docs/callers.md
for t in "$STOCK_TREE" "$PATCHED_TREE"; do
	git -C "$t" rev-parse --git-dir >/dev/null 2>&1 ||
		die "$t is not a prepared tree (run scripts/prepare-tree.sh)"
done
[ -f "$tsv" ] || die "$tsv missing"

# The audited APIs. get_user_page_fast_only() (an inline in
# include/linux/mm.h), follow_page() and get_dump_page() also hand out
# FOLL_GET references from the GUP internals, so their callers count too.
apis='get_user_pages|get_user_pages_fast|get_user_pages_fast_only'
apis+='|get_user_pages_remote|get_user_pages_unlocked'
apis+='|pin_user_pages|pin_user_pages_fast|pin_user_pages_fast_only'
apis+='|pin_user_pages_remote|pin_user_pages_unlocked'
apis+='|iov_iter_get_pages2|iov_iter_get_pages_alloc2|iov_iter_extract_pages'
apis+='|get_user_page_fast_only|follow_page|get_dump_page'
# Left out: mm/ (the implementation), lib/iov_iter.c (the iov_iter APIs
# themselves, whose holds are their callers' business), include/ (the
# declarations and the one-line wrappers), tools/ and Documentation/.
pathspec=('*.c' '*.h' ':!mm/' ':!lib/iov_iter.c' ':!include/' ':!tools/' ':!Documentation/')

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One line per call: path, enclosing function, API, line number. Comments,
# strings and character literals are blanked first so that a name in a
# message or a comment is not a call. Kernel style puts a function
# definition at column 0, so the last column-0 line that has a "(" and does
# not end in ";" names the function (a #define names its macro).
cat >"$tmp/calls.awk" <<'EOF'
function strip(s,   out, i, c, n, q) {
	if (!incom && s !~ /[\/"']/) return s
	out = ""; n = length(s)
	for (i = 1; i <= n; i++) {
		c = substr(s, i, 1)
		if (incom) {
			if (c == "*" && substr(s, i + 1, 1) == "/") { incom = 0; i++ }
			continue
		}
		if (c == "/" && substr(s, i + 1, 1) == "*") { incom = 1; i++; out = out " "; continue }
		if (c == "/" && substr(s, i + 1, 1) == "/") break
		if (c == "\"" || c == "'") {
			q = c
			for (i++; i <= n; i++) {
				c = substr(s, i, 1)
				if (c == "\\") i++
				else if (c == q) break
			}
			out = out q q
			continue
		}
		out = out c
	}
	return out
}
BEGIN { call = "(^|[^A-Za-z0-9_])(" apis ")[ \t]*[(]" }
FNR == 1 { incom = 0; fn = "" }
{
	line = strip($0)
	head = 0
	if (line ~ /^#[ \t]*define[ \t]+[A-Za-z_]/) {
		t = line
		sub(/^#[ \t]*define[ \t]+/, "", t)
		match(t, /^[A-Za-z_][A-Za-z0-9_]*/)
		fn = substr(t, 1, RLENGTH); head = 1
	} else if (line ~ /^[A-Za-z_]/ && line ~ /[(]/ && line !~ /;[ \t]*$/ &&
	    match(line, /[A-Za-z_][A-Za-z0-9_]*[ \t]*[(]/)) {
		fn = substr(line, RSTART, RLENGTH); head = 1
		sub(/[ \t]*[(]$/, "", fn)
		if (fn ~ /^(COMPAT_)?SYSCALL_DEFINE[0-6]$/) {
			t = substr(line, RSTART + RLENGTH)
			match(t, /[A-Za-z_][A-Za-z0-9_]*/)
			fn = (fn ~ /^COMPAT/ ? "compat_sys_" : "sys_") substr(t, RSTART, RLENGTH)
		}
	}
	t = line
	while (match(t, call)) {
		m = substr(t, RSTART, RLENGTH)
		t = substr(t, RSTART + RLENGTH)
		sub(/^[^A-Za-z_]/, "", m)
		sub(/[ \t]*[(]$/, "", m)
		if (head && m == fn) continue	# a definition, not a call
		print FILENAME "\t" (fn == "" ? "(file scope)" : fn) "\t" m "\t" FNR
	}
}
EOF
calls() {
	(cd "$1" && git grep -lzwE "$apis" -- "${pathspec[@]}" |
		xargs -0 -r awk -v apis="$apis" -f "$tmp/calls.awk") |
		sort -t "$(printf '\t')" -k1,1 -k2,2 -k3,3 -k4,4n >"$2"
}
calls "$STOCK_TREE" "$tmp/stock"
calls "$PATCHED_TREE" "$tmp/patched"
[ -s "$tmp/patched" ] || die "no call found in $PATCHED_TREE: wrong tree?"

# What the header says about the trees: paths relative to the project so
# that the output is the same in every clone.
# Named from the build directory, so the output is the same wherever
# BUILD lives (make check from a clone with BUILD= pointing elsewhere).
rel() {
	case "$1" in
	"$BUILD"/*) echo "build/${1#"$BUILD"/}" ;;
	"$TOP"/*) echo "${1#"$TOP"/}" ;;
	*) echo "$1" ;;
	esac
}
desc() {
	if [ -f "$1/.base-desc" ]; then
		cat "$1/.base-desc"
	else
		git -C "$1" log -1 --format=%s "$(git -C "$1" rev-list --max-parents=0 HEAD | head -1)"
	fi
}
stock_head=$(git -C "$STOCK_TREE" rev-parse HEAD)
note=
if git -C "$PATCHED_TREE" merge-base --is-ancestor "$stock_head" HEAD 2>/dev/null; then
	on_top=$(git -C "$PATCHED_TREE" log --reverse --format='%s' "$stock_head..HEAD")
else
	on_top=''
	note="not a descendant of the stock tree's HEAD"
fi
{
	echo "note=$note"
	echo "patched=$(rel "$PATCHED_TREE")"
	echo "patched_desc=$(desc "$PATCHED_TREE")"
	echo "stock=$(rel "$STOCK_TREE")"
	echo "stock_desc=$(desc "$STOCK_TREE")"
	printf '%s\n' "$on_top" | sed '/^$/d; s/^/commit=/'
} >"$tmp/meta"

out=$tmp/callers.md
awk -v tsvname="docs/callers.tsv" -v meta="$tmp/meta" -v tsv="$tsv" \
	-v stock="$tmp/stock" -v out="$out" '
BEGIN { FS = "\t"; pinre = "^(pin_user_pages.*|iov_iter_extract_pages)$" }
function err(msg) { print "error: " msg > "/dev/stderr"; nerr++ }
function md(s) { gsub(/\|/, "\\|", s); return s }
FILENAME == meta {
	i = index($0, "="); k = substr($0, 1, i - 1); v = substr($0, i + 1)
	if (k == "commit") commits[++ncommits] = v; else m[k] = v
	next
}
FILENAME == tsv {
	if ($0 ~ /^#/ || $0 ~ /^[ \t]*$/) next
	where = tsvname ":" FNR
	if (NF != 6) { err(where ": want 6 tab-separated columns, got " NF); next }
	k = $1 FS $2 FS $3
	if (k in row) { err(where ": duplicate of line " row[k] ": " $1 " " $2 " " $3); next }
	if ($4 !~ /^([1-5]|-)$/) err(where ": case must be 1-5 or -, got \"" $4 "\"")
	if ($5 !~ /^(pin|converted|get-ok|todo|no-convert)$/)
		err(where ": unknown status \"" $5 "\"")
	if ($6 == "") err(where ": empty reason")
	row[k] = FNR; order[++nrows] = k
	tcase[k] = $4; tstat[k] = $5; why[k] = $6
	next
}
FILENAME == stock {
	skey[$1 FS $2 FS $3] = 1
	if ($3 !~ pinre) sget[$1 FS $2] = 1
	next
}
{
	k = $1 FS $2 FS $3
	if (!(k in ncalls)) keys[++nkeys] = k
	ncalls[k]++; ntotal++; files[$1] = 1
	at[k] = (ncalls[k] > 1 ? at[k] "," : $1 ":") $4
}
END {
	for (i = 1; i <= nkeys; i++) {
		k = keys[i]; split(k, f, FS)
		pin = f[3] ~ pinre
		# The code decides "converted": a get in stock, a pin now, same
		# file and function.
		conv = pin && !(k in skey) && ((f[1] FS f[2]) in sget)
		# A row written for the stock API still holds once a patch
		# converts that function.
		rk = k
		if (!(k in row) && conv)
			for (j = 1; j <= nrows; j++) {
				split(order[j], g, FS)
				if (g[1] == f[1] && g[2] == f[2] && (order[j] in skey) &&
				    !(order[j] in ncalls) && !(order[j] in used)) {
					rk = order[j]; break
				}
			}
		if (!(rk in row)) { err("no row in " tsvname " for " at[k] ": " f[2] " calls " f[3]); continue }
		used[rk] = 1; rowof[k] = rk
		st = tstat[rk]; where = tsvname ":" row[rk]
		if (conv) {
			if (st == "get-ok" || st == "no-convert")
				err(where ": typed " st " but the series converts " f[1] " " f[2] "; fix the row")
			st = "converted"
		} else if (st == "converted") {
			err(where ": typed converted, but " f[1] " " f[2] " does not go from a get in " m["stock"] " to a pin")
		} else if (st == "pin" && !pin) {
			err(where ": typed pin, but " f[3] " takes references")
		} else if (st == "pin" && !(k in skey)) {
			err(where ": typed pin (already in Debian), but " m["stock"] " has no such call")
		} else if (st != "pin" && pin) {
			err(where ": " f[3] " pins; status should be pin, not " st)
		}
		status[k] = st; count[st]++
	}
	for (i = 1; i <= nrows; i++) {
		k = order[i]
		if (!(k in used)) {
			split(k, f, FS)
			err(tsvname ":" row[k] ": stale, no call in " m["patched"] ": " f[1] " " f[2] " " f[3])
		}
	}
	if (nerr) exit 1

	nfiles = 0; for (p in files) nfiles++
	print "# Callers of get_user_pages, pin_user_pages and iov_iter_*_pages" > out
	print "" > out
	print "Generated by `scripts/audit-callers.sh`, do not edit: the case, status" > out
	print "and reason come from `docs/callers.tsv`, the rest from the code." > out
	print "" > out
	print "- Tree: `" m["patched"] "`, " m["patched_desc"] (m["note"] == "" ? "" : " (" m["note"] ")") > out
	if (ncommits) {
		print "  with " ncommits " commit" (ncommits > 1 ? "s" : "") " on top:" > out
		for (i = 1; i <= ncommits; i++) print "  - " commits[i] > out
	}
	print "- Compared with: `" m["stock"] "`, " m["stock_desc"] > out
	print "- Scope: every call outside `mm/`, `lib/iov_iter.c`, `include/`, `tools/`" > out
	print "  and `Documentation/`; " ntotal " call sites, " nkeys " rows (file, function, API) in " nfiles " files." > out
	print "" > out
	print "| status | rows | meaning |" > out
	print "| --- | ---: | --- |" > out
	split("pin converted get-ok todo no-convert", sts, " ")
	mean["pin"] = "already FOLL_PIN in Debian'"'"'s tree"
	mean["converted"] = "get in the stock tree, pin after the series (computed)"
	mean["get-ok"] = "a plain reference is right: Case 3/4, or the data is not used while the owner could fork"
	mean["todo"] = "should pin (Case 1/2/5), not converted yet"
	mean["no-convert"] = "should pin, but the pages are released by a path that cannot unpin"
	for (i = 1; i <= 5; i++) print "| " sts[i] " | " count[sts[i]] + 0 " | " mean[sts[i]] " |" > out
	print "" > out
	print "Case: the cases of `Documentation/core-api/pin_user_pages.rst` (1 direct" > out
	print "I/O, 2 long-term DMA, 3 MMU notifier, 4 struct page only, 5 the kernel" > out
	print "writes or reads the data itself); `-`: no user memory." > out
	split("drivers fs block net io_uring arch other", areas, " ")
	for (a = 1; a <= 7; a++) {
		shown = 0
		for (i = 1; i <= nkeys; i++) {
			k = keys[i]; split(k, f, FS)
			top = f[1]; sub(/\/.*/, "", top)
			if (top !~ /^(drivers|fs|block|net|io_uring|arch)$/) top = "other"
			if (top != areas[a]) continue
			if (!shown) {
				print "" > out
				print "## " areas[a] (areas[a] == "other" ? "" : "/") > out
				print "" > out
				print "| file | function | api | case | status | reason |" > out
				print "| --- | --- | --- | --- | --- | --- |" > out
				shown = 1
			}
			api = "`" f[3] "`" (ncalls[k] > 1 ? " (" ncalls[k] " calls)" : "")
			rk = rowof[k]
			print "| `" f[1] "` | `" f[2] "` | " api " | " tcase[rk] " | " status[k] " | " md(why[rk]) " |" > out
		}
	}
}' "$tmp/meta" "$tsv" "$tmp/stock" "$tmp/patched" ||
	die "docs/callers.tsv does not match the calls in $(rel "$PATCHED_TREE") (see above)"

if [ -n "$check" ]; then
	if ! cmp -s "$md" "$out"; then
		diff -u "$md" "$out" | head -40 >&2
		die "docs/callers.md is out of date: run scripts/audit-callers.sh"
	fi
	log "docs/callers.md is up to date"
else
	cp "$out" "$md"
	log "wrote docs/callers.md"
fi
