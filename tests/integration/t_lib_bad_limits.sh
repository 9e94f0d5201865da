#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A bad BONSAI_LIMITS prints exactly one stderr line quoting it; the program runs
# unlimited, its output intact, and exits 0.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_cmd dd
make_data "$T/src" 8
i=0
for bad in 'write=fast' 'wirte=1MiB/s' 'write=1MiB/s:fd=disk' 'write=1MiB/s:turbo=1' 'write=-5MiB/s'; do
  i=$((i + 1))
  s=$(now_ns)
  limited "$bad" "$T/s$i.json" dd if="$T/src" of="$T/out$i" bs=64k status=none 2> "$T/err$i" ||
    fail "'$bad': dd exited non-zero"
  secs=$(secs_since "$s")
  same_data "$T/src" "$T/out$i"
  [ "$(wc -l < "$T/err$i")" -eq 1 ] || fail "'$bad': want one stderr line, got: $(cat "$T/err$i")"
  grep -qF "'$bad'" "$T/err$i" || fail "'$bad': stderr does not quote it: $(cat "$T/err$i")"
  note "'$bad' -> $(cat "$T/err$i") (${secs}s)"
  check_between "'$bad': unlimited 8 MiB copy (s)" "$secs" 0 1.5
done
