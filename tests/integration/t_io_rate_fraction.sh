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

# write=2.5/s through the library: 10 waits of 0.4 s after the free first write.
start=$(now_ns)
limited 'write=2.5/s' "" dd if=/dev/zero of=/dev/null bs=1 count=11 status=none || fail "dd"
secs=$(secs_since "$start")
note "11 one-byte writes at 2.5/s: $secs s (load $(cut -d' ' -f1 /proc/loadavg))"
check_between "11 writes at 2.5/s (library)" "$secs" 3.8 4.2

# The same through the supervisor (its bucket is the library's: bucket/token_bucket.h).
start=$(now_ns)
"$CTL" run --supervise -s sv -l 'write=2.5/s' -- dd if=/dev/zero of=/dev/null bs=1 count=6 status=none 2> "$T/sv.err" ||
  fail "supervised dd: $(cat "$T/sv.err")"
secs=$(secs_since "$start")
note "6 supervised one-byte writes at 2.5/s: $secs s"
check_between "6 writes at 2.5/s (supervised)" "$secs" 1.9 2.6

# A live set keeps the fraction and prints the service's limits.
out=$("$CTL" set sv 'fsync=0.5/s,write=2.5/s') || fail "set: $out"
grep -q "limits #[0-9]*: fsync=0.5/s,write=2.5/s$" <<<"$out" || fail "set printed: $out"
"$CTL" stat sv | grep -q "fsync=0.5/s" || fail "stat lost the fraction: $("$CTL" stat sv)"
exit 0
