#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Makes the Debian roots the libc and container tests use (lib/libc_lib.sh glibc_root:
# bullseye and bookworm, once per build dir) before any timed test starts: on a fresh
# machine mmdebstrap downloads for a minute or more, which must not count against one
# test's timeout. A root that cannot be made is said here; the tests that need it then
# skip as before. Run by `make test-integration`. Env: BONSAI_BUILD.
. "$(dirname "$0")/libc_lib.sh"
for suite in bullseye bookworm; do
  if [ -f "$ROOTS/$suite/.bonsai-root" ]; then continue; fi
  start=$(now_ns)
  ( glibc_root "$suite" ) 2>&1 | sed 's/^/roots: /'
  if [ -f "$ROOTS/$suite/.bonsai-root" ]; then echo "roots: $suite made in $(secs_since "$start") s"
  else echo "roots: no $suite root (the tests that need it skip)"; fi
done
exit 0
