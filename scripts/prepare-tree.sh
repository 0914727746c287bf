#!/bin/bash
# Prepare the kernel source tree for one variant (SERIES=none or patched):
# Debian's linux-source tarball as a git repository with one base commit,
# and a worktree per variant where `series` is applied with git am.
# LINUX_SRC=/path/to/git/tree uses the user's repository instead; their
# checkout is left untouched (we only add a worktree and a branch).
set -eu
# shellcheck source=scripts/common.sh
. "$(dirname "$0")/common.sh"
lock_tree x

BASE_REPO=$BUILD/linux
if [ -n "${LINUX_SRC:-}" ]; then
	git -C "$LINUX_SRC" rev-parse --git-dir >/dev/null 2>&1 ||
		die "LINUX_SRC=$LINUX_SRC is not a git repository"
	BASE_REPO=$(cd "$LINUX_SRC" && pwd)
	BASE_REV=$(git -C "$BASE_REPO" rev-parse HEAD)
	BASE_DESC="user tree $BASE_REPO at $(git -C "$BASE_REPO" describe --always HEAD)"
else
	[ -r "$LINUX_TARBALL" ] || die "$LINUX_TARBALL missing: install $LINUX_PKG"
	ver=$(pkg_version "$LINUX_PKG")
	[ -n "$ver" ] || ver=unknown
	BASE_DESC="Debian $LINUX_PKG $ver"
	if [ "$(cat "$BASE_REPO/.base-desc" 2>/dev/null)" != "$BASE_DESC" ]; then
		log "extracting $LINUX_TARBALL ($BASE_DESC)"
		rm -rf "$BASE_REPO" "$BASE_REPO.tmp" "$BUILD"/tree-*
		mkdir -p "$BASE_REPO.tmp"
		tar -C "$BASE_REPO.tmp" -xf "$LINUX_TARBALL" --strip-components=1
		(
			cd "$BASE_REPO.tmp"
			git init -q -b debian
			# git am needs a committer; keep the user's if they have one.
			git config user.email >/dev/null ||
				git config user.email harness@localhost
			git config user.name >/dev/null ||
				git config user.name "foll-pin harness"
			git config gc.auto 0
			# Debian's top-level .gitignore ignores everything: force.
			git add -A -f
			git commit -q -m "$BASE_DESC"
		)
		echo "$BASE_DESC" >"$BASE_REPO.tmp/.git/base-desc"
		mv "$BASE_REPO.tmp" "$BASE_REPO"
		echo "$BASE_DESC" >"$BASE_REPO/.base-desc"
		git -C "$BASE_REPO" update-index -q --refresh || true
		printf '/.base-desc\n' >>"$BASE_REPO/.git/info/exclude"
	fi
	BASE_REV=$(git -C "$BASE_REPO" rev-parse debian)
fi

want="$BASE_REV $(series_hash)"
if [ "$(cat "$TREE/.prepared" 2>/dev/null)" = "$want" ]; then
	log "tree $TREE is up to date ($VARIANT)"
	exit 0
fi

log "preparing $TREE ($VARIANT on $BASE_DESC)"
# A worktree left from another base repository (LINUX_SRC changed) goes.
if [ -e "$TREE/.git" ] &&
	[ "$(cd "$TREE" && cd "$(git rev-parse --git-common-dir)" && pwd)" != \
		"$(cd "$BASE_REPO" && cd "$(git rev-parse --git-common-dir)" && pwd)" ]; then
	rm -rf "$TREE"
fi
if [ ! -e "$TREE/.git" ]; then
	rm -rf "$TREE"
	git -C "$BASE_REPO" worktree prune
	git -C "$BASE_REPO" worktree add -q -f --detach "$TREE" "$BASE_REV"
fi
cd "$TREE"
rm -f .prepared
git am --abort >/dev/null 2>&1 || true
git checkout -q -f -B "foll-pin-$VARIANT" "$BASE_REV"
# The object directories inside the tree (common.sh) survive a re-prepare.
git clean -q -fdx -e '/obj*'

if [ "$VARIANT" = patched ]; then
	n=0
	while read -r p; do
		case "$p" in '' | '#'*) continue ;; esac
		f=$PATCHES/$p
		[ -f "$f" ] || die "series lists $p but ${PATCHES#"$TOP"/}/$p does not exist"
		if ! git am -q --whitespace=nowarn "$f" >"$BUILD/am-$VARIANT.log" 2>&1; then
			echo "error: patch does not apply: ${PATCHES#"$TOP"/}/$p" >&2
			sed 's/^/  git am: /' "$BUILD/am-$VARIANT.log" >&2
			echo "  failing hunks:" >&2
			git apply --check -v "$f" 2>&1 | grep -E '^(error|Checking|Hunk)' |
				sed 's/^/    /' >&2 || true
			git am --abort >/dev/null 2>&1 || true
			exit 1
		fi
		n=$((n + 1))
	done <"$SERIES_FILE"
	log "applied $n patches"
fi
printf '%s\n' "$BASE_DESC" >.base-desc
git log --format='%h %s' "$BASE_REV..HEAD" >.applied
printf '/.base-desc\n/.applied\n/.prepared\n' >>"$(git rev-parse --git-path info/exclude)"
echo "$want" >.prepared
