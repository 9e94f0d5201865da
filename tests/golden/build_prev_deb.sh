#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the previous release's Debian package (what tests/upgrade/t_upgrade_deb.sh
# installs, then upgrades to this build's under a running service) into OUT/bonsai.deb,
# from this clone's history: the tag v0.2.0, else its commit 817089e (as build_prev.sh).
# The release's own packaging/debian and debian/rules, in a `git archive` of it (0.2.0's
# `make deb` needs a git work tree, so its dpkg-buildpackage is run here directly). Kept
# under OUT (make's build root: build/prev-deb): built once, reused while OUT/rev names the
# same commit. Concurrent callers take turns on OUT/.lock. Env: CXX, CC (passed on: a
# compiler cache is used when given).
# Exit: 0 built or already there; 3 no git history here; 4 a git clone without the
# release (shallow); 5 no dpkg-buildpackage here; 1 build failed.
set -euo pipefail
out=${1:?usage: build_prev_deb.sh OUT_DIR}
top=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
if ! git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
  echo "build_prev_deb: $top is not a git clone: the previous release cannot be built here" >&2
  exit 3
fi
command -v dpkg-buildpackage >/dev/null 2>&1 || { echo "build_prev_deb: no dpkg-buildpackage (make deps)" >&2; exit 5; }
rev=
for r in v0.2.0 817089e; do
  if c=$(git -C "$top" rev-parse -q --verify "$r^{commit}" 2>/dev/null); then rev=$c name=$r; break; fi
done
if [ -z "$rev" ]; then
  echo "build_prev_deb: neither the tag v0.2.0 nor the commit 817089e is in this clone (a shallow clone? git fetch --tags --unshallow)" >&2
  exit 4
fi
exec 9>"$out/.lock"
flock 9
if [ -f "$out/bonsai.deb" ] && [ "$(cat "$out/rev" 2>/dev/null)" = "$rev" ]; then exit 0; fi
rm -rf "$out/src" "$out/bonsai.deb" "$out/rev" "$out"/bonsai[-_]*
mkdir -p "$out/src"
git -C "$top" archive "$rev" | tar -x -C "$out/src"
cp -pr "$out/src/packaging/debian" "$out/src/debian"
start=$SECONDS
# -d: the build dependencies are make deps' business; a missing tool fails the build.
if ! (cd "$out/src" && env ${CXX:+CXX="$CXX"} ${CC:+CC="$CC"} \
      BONSAI_B="$out/src/debian/build" dpkg-buildpackage -us -uc -b -d) >"$out/build.log" 2>&1; then
  tail -n 30 "$out/build.log" >&2
  echo "build_prev_deb: building $name's package failed ($out/build.log)" >&2
  exit 1
fi
deb=$(ls "$out"/bonsai_*.deb | head -n 1)
mv "$deb" "$out/bonsai.deb"
rm -rf "$out/src" "$out"/bonsai[-_]*  # the dbgsym package, .changes, .buildinfo
echo "$rev" >"$out/rev"
echo "build_prev_deb: $name ($rev) packaged in $((SECONDS - start)) s: $out/bonsai.deb ($(basename "$deb"))"
