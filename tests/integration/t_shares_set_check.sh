#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A live `set` refuses what `check` refuses in a file (issue "every word true"): with
# docs/reference/shares.md's capacity of 16 MiB/s and a guaranteed 4 MiB/s, `set b
# writes=14MiB/s` (18 MiB/s under the capacity) exits 2 and changes nothing, even when a
# tenant rewrites the host segment's capacity (the check reads the trusted copy `load`
# keeps); a set that fits prints the service's resulting limits; `set --merge` keeps a
# rule a newer one covers in part (write=10MiB/s and writes=20MiB/s:fd=socket), and
# refuses, saying why, a merge that would split a rule in two.
# timeout: 30
. "$(dirname "$0")/lib/shares_lib.sh"
shares_yaml 16 4 8
seq0=$(jq_stat b 'd["limits_seq"]')

# A tenant (anyone who can write the host segment) raises the capacity there: ignored.
host=$(ls /dev/shm/"${BONSAI_SHM_PREFIX}"bonsai-host.* | head -1)
[ -f "$host" ] || fail "no host segment"
python3 - "$host" <<'PY'
import struct, sys
# The first capacity rule's rate (ShmHost: header 64, ShmLimits' seq block 64, LimitSet's
# count 8, Rule's calls 8): 64 MiB/s, with the seqlock left even (a valid read).
with open(sys.argv[1], "r+b") as f:
    f.seek(144)
    f.write(struct.pack("<Q", 64 << 20))
PY
rc=0
out=$("$CTL" set b 'writes=14MiB/s:ceil=16MiB/s' 2>&1) || rc=$?
note "refused: $out"
[ "$rc" = 2 ] || fail "set over the capacity: exit $rc, not 2: $out"
grep -q "add up to 18MiB/s, more than its 16MiB/s" <<<"$out" || fail "set did not say why: $out"
grep -q "nothing was changed" <<<"$out" || fail "set did not say nothing changed: $out"
! grep -q "^usage:" <<<"$out" || fail "a refused set is not a usage error, yet it printed the usage: $out"
[ "$(jq_stat b 'd["limits_seq"]')" = "$seq0" ] || fail "the refused set changed b's limits"
"$CTL" stat b | grep -q "writes=8MiB/s:ceil=16MiB/s" || fail "b's limits changed: $("$CTL" stat b)"

# --stdin refuses the same line, and goes on.
out=$(printf 'writes=20MiB/s\nwrites=12MiB/s:ceil=16MiB/s\n' | "$CTL" set --stdin b 2> "$T/stdin.err") && rc=0 || rc=$?
[ "$rc" = 2 ] || fail "set --stdin with a bad line: exit $rc"
grep -q "^stdin:1:.*more than its 16MiB/s" "$T/stdin.err" || fail "set --stdin: $(cat "$T/stdin.err")"
grep -q "b: limits #[0-9]*: writes=12MiB/s:ceil=16MiB/s" <<<"$out" || fail "set --stdin printed: $out"

# What fits is set, and the resulting limits printed; the trusted copy follows the set.
out=$("$CTL" set b 'writes=10MiB/s:ceil=16MiB/s') || fail "set that fits: $out"
grep -q "b: limits #[0-9]*: writes=10MiB/s:ceil=16MiB/s$" <<<"$out" || fail "set printed: $out"
rc=0
out=$("$CTL" set a 'writes=8MiB/s:ceil=16MiB/s' 2>&1) || rc=$?
[ "$rc" = 2 ] || fail "a at 8 beside b at 10 (18 of 16): exit $rc: $out"
"$CTL" rm b > /dev/null || fail "rm b"
"$CTL" set a 'writes=8MiB/s:ceil=16MiB/s' > /dev/null || fail "a at 8 once b is gone was refused"

# --merge keeps what the newer rule leaves the older one (in a namespace without shares:
# m's write would count under the capacity above).
export BONSAI_SHM_PREFIX=${BONSAI_SHM_PREFIX}m.
"$CTL" run -s m -l 'write=10MiB/s' -- true || fail "run m"
out=$("$CTL" set --merge m 'writes=20MiB/s:fd=socket') || fail "set --merge: $out"
note "$out"
grep -q "m: limits #[0-9]*: write=10MiB/s:fd=file+pipe,writes=20MiB/s:fd=socket$" <<<"$out" || fail "merge: $out"
rc=0
"$CTL" set m 'read+write=10MiB/s' > /dev/null || fail "set m"
out=$("$CTL" set --merge m 'write=5MiB/s:fd=socket' 2>&1) || rc=$?
[ "$rc" = 2 ] || fail "a merge splitting a rule: exit $rc: $out"
grep -q "not one rule" <<<"$out" || fail "no reason: $out"
"$CTL" stat m | grep -q "limits #[0-9]*: read+write=10MiB/s" || fail "the refused merge changed m: $("$CTL" stat m)"
exit 0
