#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fractional call rates are kept exactly (issue "every word true"): 11 one-byte writes
# under write=2.5/s take 4.0 s (the first is free: a call rate's depth is one call), in
# the library and under the supervisor (one bucket for both); check-limits and `set`
# print 0.5/s back; a rate finer than a millionth is refused with the reason.
# timeout: 60
# parallel: no (a 5% timing tolerance)
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd dd

out=$("$CTL" check-limits 'fsync=0.5/s') || fail "check-limits refused 0.5/s: $out"
[ "$out" = "fsync=0.5/s" ] || fail "check-limits printed '$out'"
out=$("$CTL" check-limits 'openat=0.4/s,write=2.5/s') || fail "check-limits refused 0.4/s: $out"
[ "$out" = "openat=0.4/s,write=2.5/s" ] || fail "check-limits printed '$out'"
err=$("$CTL" check-limits 'fsync=0.0000001/s' 2>&1) && fail "check-limits took a rate finer than a millionth"
grep -q "cannot be kept exactly" <<<"$err" || fail "no reason: $err"
note "$(head -1 <<<"$err")"

# write=2.5/s through the library: 10 waits of 0.4 s after the free first write (dd's
# own time: the process's start on a loaded machine is not the bucket's).
limited 'write=2.5/s' "" dd if=/dev/zero of=/dev/null bs=1 count=11 2> "$T/dd.err" || fail "dd: $(cat "$T/dd.err")"
secs=$(sed -n 's/.* copied, \([0-9.]*\) s,.*/\1/p' "$T/dd.err")
[ -n "$secs" ] || fail "no time from dd: $(cat "$T/dd.err")"
note "11 one-byte writes at 2.5/s: $secs s (load $(cut -d' ' -f1 /proc/loadavg))"
check_between "11 writes at 2.5/s (library)" "$secs" 3.8 4.2

# The same through the supervisor (its bucket is the library's: bucket/token_bucket.h).
"$CTL" run --supervise -s sv -l 'write=2.5/s' -- dd if=/dev/zero of=/dev/null bs=1 count=6 2> "$T/sv.err" ||
  fail "supervised dd: $(cat "$T/sv.err")"
secs=$(sed -n 's/.* copied, \([0-9.]*\) s,.*/\1/p' "$T/sv.err")
[ -n "$secs" ] || fail "no time from the supervised dd: $(cat "$T/sv.err")"
note "6 supervised one-byte writes at 2.5/s: $secs s"
# The supervisor holds each call to its place (no free first call, as at whole rates:
# 6 writes at 2/s take 3.0 s there): 6 x 0.4 s.
check_between "6 writes at 2.5/s (supervised)" "$secs" 2.28 2.6

# A live set keeps the fraction and prints the service's limits.
out=$("$CTL" set sv 'fsync=0.5/s,write=2.5/s') || fail "set: $out"
grep -q "limits #[0-9]*: fsync=0.5/s,write=2.5/s$" <<<"$out" || fail "set printed: $out"
"$CTL" stat sv | grep -q "fsync=0.5/s" || fail "stat lost the fraction: $("$CTL" stat sv)"
exit 0
