#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Rules on functions rather than system calls (fwrite, fread: stdio and its fortified
# forms) with a supervisor (issue 49): a limit set naming no system call starts (before:
# "handing the listener over failed: Bad address"), and under --strict the library holds
# an fwrite rule of its own, as without --strict; an fwrite sharing its bucket with
# write is left to the supervisor, paid once (t_strict_escapes (c)).
# timeout: 40
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog strict_probe sv_static
P=$PRE/strict_probe
CAP=$((4 * MiB))
N=$((6 * MiB))

for mode in plain strict; do
  flag=; [ $mode = strict ] && flag=--strict
  out=$("$CTL" run $flag -s fw$mode -l "fwrite=${CAP}B/s" -- "$P" stdio "$T/fw$mode" $N 2> "$T/fw$mode.err") ||
    fail "fwrite=4MiB/s, $mode: $(cat "$T/fw$mode.err")"
  check_rate "fwrite under fwrite=4MiB/s, $mode" $N "$(field "$out" secs)" $CAP
done
# fwrite and write in two buckets under --strict: fwrite's is the library's (4 MiB/s),
# glibc's write(2) underneath is charged to write's too (a cap that never binds here)
out=$("$CTL" run --strict -s fw2 -l "fwrite=${CAP}B/s" -l 'write=1GiB/s' -- "$P" stdio "$T/fw2" $N 2> "$T/fw2.err") ||
  fail "fwrite and write rules under --strict: $(cat "$T/fw2.err")"
check_rate "fwrite=4MiB/s beside write=1GiB/s, strict" $N "$(field "$out" secs)" $CAP
[ "$(total_bytes fw2 write)" -ge $N ] || fail "write(2) under fwrite not charged to write: $(total_bytes fw2 write)"

# a static program under --supervise with only function rules: starts, runs
"$CTL" run --supervise -s fr -l 'fread=1MiB/s' -l 'fwrite=1MiB/s' -- "$PRE/sv_static" write "$T/fr" $((1 * MiB)) \
  > "$T/fr.out" 2> "$T/fr.err" || fail "--supervise with fread/fwrite rules only: $(cat "$T/fr.err")"
[ "$(stat -c %s "$T/fr")" = $((1 * MiB)) ] || fail "static writer under function rules: data lost"
exit 0
