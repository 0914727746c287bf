#!/bin/bash
# Write patches/ and series (BASE=6.12: patches-6.12/, series-6.12) from the commits of a kernel branch, for the
# developer who edits the series as git commits (see README, "Changing
# the series"). Usage: export-series.sh [TREE [RANGE]]; default
# TREE=$BUILD/dev, RANGE=debian..HEAD.
# The cover letter keeps the subject and text of the current
# patches/0000-cover-letter.patch; format-patch writes the shortlog and
# diffstat anew.
set -eu
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"

tree=${1:-$BUILD/dev}
range=${2:-debian..HEAD}
cover=$PATCHES/0000-cover-letter.patch
git -C "$tree" rev-parse -q --verify "${range#*..}" >/dev/null ||
	die "$tree: no such revision in '$range'"
[ -n "$(git -C "$tree" rev-list "$range")" ] || die "$tree: '$range' has no commits"
[ -f "$cover" ] || die "no $cover to take the cover text from"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
git -C "$tree" format-patch -q --no-signature --cover-letter -o "$out" "$range"
# An empty context line is written as a bare newline, which git am takes
# (as GNU patch does): checkpatch.pl given a patch that git tracks, as
# patches/X is here, reads it in --file mode and would call " " trailing
# whitespace.
# Debian's source has a few whitespace-only lines: a patch whose context
# would carry one is written with two lines of context instead of three.
n=0
for c in $(git -C "$tree" rev-list --reverse "$range"); do
	n=$((n + 1))
	p=$(printf '%s/%04d-*.patch' "$out" "$n")
	# shellcheck disable=SC2086 # $p is a glob naming one file
	if grep -qP '^ .*[ \t]$' $p; then
		rm -f $p
		git -C "$tree" format-patch -q --no-signature -U2 --start-number "$n" \
			--subject-prefix="PATCH $n/$(git -C "$tree" rev-list --count "$range")" \
			-o "$out" -1 "$c"
	fi
done
for p in "$out"/[0-9][0-9][0-9][0-9]-*.patch; do
	awk '/^diff --git / { d = 1 } d && $0 == " " { print ""; next } { print }' \
		"$p" >"$p.tmp" && mv "$p.tmp" "$p"
done

# Subject: the text after "]" of the old cover's Subject line; blurb: from
# the blank line after the headers to the shortlog ("Name (N):").
awk -v old="$cover" '
BEGIN {
	while ((getline l < old) > 0) {
		if (!hdr_done) {
			if (l ~ /^Subject: /) { sub(/^Subject: \[[^]]*\] /, "", l); subj = l }
			else if (l == "") hdr_done = 1
			continue
		}
		if (l ~ /^[^ ].* \([0-9]+\):$/) break
		blurb = blurb l "\n"
	}
	if (subj == "" || blurb == "") { print "cannot read " old > "/dev/stderr"; exit 1 }
}
/^Subject: .*\*\*\* SUBJECT HERE \*\*\*/ { sub(/\*\*\* SUBJECT HERE \*\*\*/, subj) }
/^\*\*\* BLURB HERE \*\*\*$/ { printf "%s", blurb; skip = 1; next }
skip && /^$/ { skip = 0; next }
{ print }' "$out/0000-cover-letter.patch" >"$out/cover" ||
	die "could not carry the cover letter over"
mv "$out/cover" "$out/0000-cover-letter.patch"

rm -f "$PATCHES"/[0-9][0-9][0-9][0-9]-*.patch
mkdir -p "$PATCHES"
cp "$out"/*.patch "$PATCHES/"
for p in "$out"/[0-9][0-9][0-9][0-9]-*.patch; do
	case "${p##*/}" in 0000-*) ;; *) echo "${p##*/}" ;; esac
done >"$SERIES_FILE"
log "wrote $(wc -l <"$SERIES_FILE") patches and the cover letter from $tree ($range)"
