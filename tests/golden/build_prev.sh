#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the previous release's library (what tests/integration/t_upgrade_live.sh swaps
# out under a running service) into OUT/libbonsai.so, from this clone's history: the tag
# v0.2.0, else its commit 817089e. Only the library (the test makes the service's
# segment with the previous release's library itself and needs no old bonsaictl). Kept
# under OUT (make's build root: build/prev): built once, reused while OUT/rev names the
# same commit. Concurrent callers (suite.sh's background build and the test) take turns
# on OUT/.lock. Env: MAKE, CXX, CC (passed on: a compiler cache is used when given).
# Exit: 0 built or already there; 3 no git history here (a tarball: nothing to build
# from); 4 a git clone without the release (shallow: git fetch --tags); 1 build failed.
set -euo pipefail
out=${1:?usage: build_prev.sh OUT_DIR}
top=$(cd "$(dirname "$0")/../.." && pwd)
MAKE=${MAKE:-make}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if ! git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
  echo "build_prev: $top is not a git clone: the previous release cannot be built here" >&2
  exit 3
fi
rev=
for r in v0.2.0 817089e; do
  if c=$(git -C "$top" rev-parse -q --verify "$r^{commit}" 2>/dev/null); then rev=$c name=$r; break; fi
done
if [ -z "$rev" ]; then
  echo "build_prev: neither the tag v0.2.0 nor the commit 817089e is in this clone (a shallow clone? git fetch --tags --unshallow)" >&2
  exit 4
fi
exec 9>"$out/.lock"
flock 9
if [ -f "$out/libbonsai.so" ] && [ "$(cat "$out/rev" 2>/dev/null)" = "$rev" ]; then exit 0; fi
rm -rf "$out/src" "$out/b" "$out/libbonsai.so" "$out/rev"
mkdir -p "$out/src"
git -C "$top" archive "$rev" | tar -x -C "$out/src"
start=$SECONDS
# `lib` only: the glibc library, release flags (the previous release's Makefile).
if ! $MAKE -C "$out/src" --no-print-directory B="$out/b" ${CXX:+CXX="$CXX"} ${CC:+CC="$CC"} lib >"$out/build.log" 2>&1; then
  tail -n 30 "$out/build.log" >&2
  echo "build_prev: building $name failed ($out/build.log)" >&2
  exit 1
fi
cp "$out/b/libbonsai.so" "$out/libbonsai.so.new" && mv "$out/libbonsai.so.new" "$out/libbonsai.so"
echo "$rev" >"$out/rev"
rm -rf "$out/src" "$out/b/obj"
echo "build_prev: $name ($rev) built in $((SECONDS - start)) s: $out/libbonsai.so"
