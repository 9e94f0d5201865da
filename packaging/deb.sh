#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make deb`: builds $B_ABS/bonsai_<version>_<arch>.deb with dpkg-buildpackage -us -uc -b
# in a copy of the working tree (the source tree gets no ./debian, no build products),
# with packaging/debian as its debian/. The package build reuses the objects under
# $B_ABS (BONSAI_B for debian/rules), so only the installed bonsaictl and the man
# pages are made anew. Then lintian, when installed: any error fails.
# The package's version: VERSION (the release) where there is no .git; in a git clone,
# from `git describe`: VERSION itself at a commit tagged vVERSION, else VERSION~gitN.gHASH
# (N commits after the last tag: sorts after the previous release, before this one). A
# clone without release tags (a CI checkout that fetched none) counts N from the commit
# that last changed VERSION, which is never more than from the tag: a later build that has
# the tags never sorts before it. NEWS.md's top entry must name VERSION too.
# Env: B_ABS (absolute build root), VERSION, MAKE; DEB_KEEP=1 keeps the copy;
# DEB_VERSION_ONLY=1 prints the version and builds nothing.
set -euo pipefail
: "${B_ABS:?}" "${VERSION:?}"
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
changelog_version=$(dpkg-parsechangelog -l packaging/debian/changelog -S Version)
if [ "$changelog_version" != "$VERSION" ]; then
  echo "make deb: VERSION says $VERSION, packaging/debian/changelog says $changelog_version" >&2
  exit 1
fi
news_version=$(sed -n 's/^## \([0-9][0-9.]*\)\( .*\)\{0,1\}$/\1/p' NEWS.md | head -n 1)
if [ "$news_version" != "$VERSION" ]; then
  echo "make deb: VERSION says $VERSION, NEWS.md's top entry says ${news_version:-nothing}" >&2
  exit 1
fi
deb_version=$VERSION
if ! git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
  :  # a tarball: the release VERSION names
elif described=$(git -C "$top" describe --tags --long --match 'v[0-9]*' 2>/dev/null); then
  # vX.Y.Z-N-gHASH
  tag=${described%-*-g*} rest=${described#"$tag"-}
  n=${rest%%-*} hash=${rest#*-}
  if [ "$n" = 0 ]; then
    if [ "$tag" != "v$VERSION" ]; then
      echo "make deb: this commit is tagged $tag but VERSION says $VERSION" >&2
      exit 1
    fi
  else
    deb_version="$VERSION~git$n.$hash"
  fi
elif base=$(git -C "$top" log -1 --format=%H -- VERSION 2>/dev/null) && [ -n "$base" ]; then
  echo "make deb: no release tag (v*) in this clone: counting from the commit that set VERSION (git fetch --tags)" >&2
  deb_version="$VERSION~git$(git -C "$top" rev-list --count "$base..HEAD").g$(git -C "$top" rev-parse --short=7 HEAD)"
fi
echo "make deb: version $deb_version"
[ "${DEB_VERSION_ONLY:-0}" != 1 ] || exit 0
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
work=$(mktemp -d "${TMPDIR:-/tmp}/bonsai-deb.XXXXXX")
[ "${DEB_KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
src=$work/bonsai-$VERSION
mkdir -p "$src"
# The tracked and new (not ignored) files of the working tree, timestamps kept so the
# objects under $B_ABS stay up to date.
git ls-files -z --cached --others --exclude-standard |
  (cd "$top" && xargs -0 sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' sh) |
  (cd "$top" && xargs -0 cp -p --parents -t "$src")
rm -rf "$src/build" "$src/debian"
cp -pr packaging/debian "$src/debian"
# The stamped version on the top changelog entry of the copy (the tree's stays VERSION).
[ "$deb_version" = "$VERSION" ] || sed -i "1s/($VERSION)/($deb_version)/" "$src/debian/changelog"
echo "make deb: dpkg-buildpackage in $src (objects from $B_ABS)"
(cd "$src" && BONSAI_B="$B_ABS" dpkg-buildpackage -us -uc -b) > "$work/build.log" 2>&1 || {
  tail -n 40 "$work/build.log" >&2
  echo "make deb: dpkg-buildpackage failed (log: $work/build.log)" >&2
  exit 1
}
deb=bonsai_${deb_version}_${arch}.deb
mkdir -p "$B_ABS"
mv "$work/$deb" "$B_ABS/$deb"
echo "make deb: $B_ABS/$deb"
if command -v lintian >/dev/null 2>&1; then
  lintian --fail-on error "$B_ABS/$deb"
else
  echo "make deb: lintian not installed, not checked"
fi
