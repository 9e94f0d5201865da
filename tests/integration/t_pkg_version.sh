#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The package's version (packaging/deb.sh, docs/upgrades.md): VERSION where there is no
# .git; in a git clone from `git describe`: VERSION at a commit tagged vVERSION (another
# tag there refused), VERSION~gitN.gHASH N commits after the last release tag, and in a
# clone without tags (a CI checkout) N counted from the commit that set VERSION, never
# more than from the tag. Each stamp sorts after the previous release and before VERSION,
# and later commits after earlier ones. VERSION, packaging/debian/changelog and NEWS.md's
# top entry must agree (this tree's do). Only the version is computed (DEB_VERSION_ONLY).
# timeout: 120
. "$(dirname "$0")/lib/lib.sh"
need_cmd git dpkg-parsechangelog dpkg
REPO=$(cd "$(dirname "$0")/../.." && pwd)

stamp() {  # DIR VERSION: the version deb.sh stamps there (its stderr in $T/stamp.err)
  (cd "$1" && DEB_VERSION_ONLY=1 B_ABS="$T/b" VERSION=$2 bash packaging/deb.sh 2> "$T/stamp.err") |
    sed -n 's/^make deb: version //p'
}

# This tree: in step.
v=$(cat "$REPO/VERSION")
got=$(stamp "$REPO" "$v") || true
[ -n "$got" ] || fail "deb.sh refuses this tree: $(cat "$T/stamp.err")"
dpkg --compare-versions "$got" le "$v" || fail "this tree stamps $got, after $v"
note "this tree: $got"

# A copy of what deb.sh reads, with releases 0.2.0 and 0.3.0.
R=$T/r
mkdir -p "$R/packaging/debian"
cp "$REPO/packaging/deb.sh" "$R/packaging/"
release() {  # VERSION: VERSION, the changelog's and NEWS.md's top entries
  echo "$1" > "$R/VERSION"
  printf 'bonsai (%s) unstable; urgency=medium\n\n  * Release.\n\n -- T <t@example.org>  Mon, 07 Dec 2026 14:00:00 +0000\n' \
    "$1" > "$R/packaging/debian/changelog"
  printf '# bonsai releases\n\n## %s (unreleased)\n\n- Things.\n' "$1" > "$R/NEWS.md"
}
commit() { git -C "$R" add -A && git -C "$R" -c user.name=t -c user.email=t@example.org commit -qm "$1" --allow-empty; }
release 0.2.0

# No .git: VERSION.
[ "$(stamp "$R" 0.2.0)" = 0.2.0 ] || fail "without .git: '$(stamp "$R" 0.2.0)' ($(cat "$T/stamp.err"))"

git -C "$R" init -q
commit "0.2.0"
git -C "$R" tag v0.2.0
[ "$(stamp "$R" 0.2.0)" = 0.2.0 ] || fail "at v0.2.0: '$(stamp "$R" 0.2.0)' ($(cat "$T/stamp.err"))"
release 0.3.0
commit "start 0.3.0"
commit "work"
h=$(git -C "$R" rev-parse --short=7 HEAD)
a=$(stamp "$R" 0.3.0)
case $a in "0.3.0~git2.g$h"*) ;; *) fail "two commits after v0.2.0: '$a' ($(cat "$T/stamp.err"))" ;; esac
commit "more"
b=$(stamp "$R" 0.3.0)
dpkg --compare-versions 0.2.0 lt "$a" && dpkg --compare-versions "$a" lt "$b" && dpkg --compare-versions "$b" lt 0.3.0 ||
  fail "0.2.0 < $a < $b < 0.3.0 does not hold"

# The tags not fetched: counted from the commit that set VERSION (2 here, 3 from the tag).
git -C "$R" tag -d v0.2.0 > /dev/null
c=$(stamp "$R" 0.3.0)
case $c in "0.3.0~git2.g"*) ;; *) fail "without tags: '$c' ($(cat "$T/stamp.err"))" ;; esac
grep -q 'no release tag' "$T/stamp.err" || fail "without tags deb.sh says nothing: $(cat "$T/stamp.err")"
dpkg --compare-versions 0.2.0 lt "$c" && dpkg --compare-versions "$c" le "$b" || fail "without tags $c sorts after $b"
git -C "$R" tag v0.2.0 HEAD~3

# The release commit: VERSION; another tag there is refused.
git -C "$R" tag v0.3.0
[ "$(stamp "$R" 0.3.0)" = 0.3.0 ] || fail "at v0.3.0: '$(stamp "$R" 0.3.0)' ($(cat "$T/stamp.err"))"
git -C "$R" tag -d v0.3.0 > /dev/null && git -C "$R" tag v0.4.0
[ -z "$(stamp "$R" 0.3.0)" ] && grep -q 'tagged v0.4.0 but VERSION says 0.3.0' "$T/stamp.err" ||
  fail "a commit tagged v0.4.0 with VERSION 0.3.0 was stamped: $(cat "$T/stamp.err")"
git -C "$R" tag -d v0.4.0 > /dev/null

# Out of step: the changelog or NEWS.md naming another version.
sed -i 's/^## 0.3.0/## 0.2.9/' "$R/NEWS.md"
[ -z "$(stamp "$R" 0.3.0)" ] && grep -q "NEWS.md's top entry says 0.2.9" "$T/stamp.err" ||
  fail "NEWS.md out of step was not refused: $(cat "$T/stamp.err")"
release 0.3.0
sed -i '1s/(0.3.0)/(0.2.9)/' "$R/packaging/debian/changelog"
[ -z "$(stamp "$R" 0.3.0)" ] && grep -q 'changelog says 0.2.9' "$T/stamp.err" ||
  fail "the changelog out of step was not refused: $(cat "$T/stamp.err")"
echo "PASS: $a $b (no tags: $c)"
