#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Shares (issue 38) in the configuration and the accounting: `check` rejects rates that
# add up to more than the capacity and a ceil below its rate at FILE:LINE:COL (exit 2,
# and `load` of such a file touches nothing); the grammar's :ceil=; `load` makes the host
# segment; stat --json, the table and the metrics show what was borrowed.
# timeout: 30
. "$(dirname "$0")/lib/shares_lib.sh"
cat > "$T/over.yaml" <<'YAML'
version: 1
host:
  capacity:
    - calls: [reads]
      rate: 100MB/s
services:
  a:
    limits:
      - calls: [read, pread]
        rate: 60MB/s
        ceil: 100MB/s
  b:
    limits:
      - calls: [reads]
        rate: 50MB/s
        ceil: 40MB/s
  c:
    limits:
      - calls: [reads]
        rate: 50MB/s
YAML
out=$("$CTL" check "$T/over.yaml" 2>&1); rc=$?
[ $rc = 2 ] || fail "check of a bad file: exit $rc, not 2"
grep -q "over.yaml:16:15: ceil '40MB/s' is below the rate" <<<"$out" || fail "no ceil < rate diagnostic: $out"
grep -q "over.yaml:4:7: the rates under this capacity add up to 110MB/s, more than its 100MB/s" <<<"$out" ||
  fail "no capacity diagnostic: $out"
out=$("$CTL" load "$T/over.yaml" 2>&1); rc=$?
[ $rc = 2 ] || fail "load of a bad file: exit $rc"
ls /dev/shm/"${BONSAI_SHM_PREFIX}"bonsai* >/dev/null 2>&1 && fail "load of a bad file made a segment"
out=$("$CTL" check-limits 'reads=10MB/s:ceil=5MB/s' 2>&1) && fail "check-limits took a ceil below the rate"
grep -q "below the rule's rate" <<<"$out" || fail "check-limits: $out"

shares_yaml 16 4 8
[ -f "/dev/shm/${BONSAI_SHM_PREFIX}bonsai-host.$(id -u)" ] || fail "load made no host segment"
[ "$(stat -c %a "/dev/shm/${BONSAI_SHM_PREFIX}bonsai-host.$(id -u)")" = 600 ] || fail "host segment not mode 0600"
writer a null; pa=$!
wait_attached a 1
sleep 1
"$CTL" stat a > "$T/table" || fail "stat a"
grep -q "shares writes=4MiB/s:ceil=16MiB/s under writes=16MiB/s: borrowed" "$T/table" || fail "stat table: $(cat "$T/table")"
[ "$(jq_stat a 'd["shares"][0]["borrowed_bytes"] > 0')" = True ] || fail "stat --json: nothing borrowed"
[ "$(jq_stat a 'd["shares"][0]["held_ceil_ns"] > 0')" = True ] || fail "stat --json: never held by the ceiling"
"$CTL" stat --prometheus a > "$T/metrics" || fail "stat --prometheus"
grep -q '^bonsai_share_borrowed_bytes_total{service="a",rule="writes=4MiB/s:ceil=16MiB/s"} [1-9]' "$T/metrics" ||
  fail "metrics: $(grep share "$T/metrics")"
"$CTL" top --batch -n 2 -d 0.3 > "$T/top" || fail "top"
grep -q "BORROW/s" "$T/top" || fail "top: no BORROW/s column: $(cat "$T/top")"
stop_writer $pa

# The environment form: :ceil= borrows from the capacity load installed (else its rate).
# `timeout --foreground`: one SIGINT, to dd. Without it timeout signals dd, then its whole
# process group; dd's handler is SA_RESETHAND, so the second one, landing before dd's loop
# reads the first, kills dd silently (no statistics: an empty rate, 1 run in 5 here).
envrate() {  # envrate LIMITS: bytes/s of a dd under them for ~1.5 s
  LD_PRELOAD="$LIB" BONSAI_LIMITS="$1" timeout --foreground -s INT 1.5 dd if=/dev/zero of=/dev/null bs=64k count=1000000 2>&1 |
    tee -a "$T/envrate.log" | awk '/copied/ { print int($1 / $(NF-3)) }'
}
r=$(envrate "writes=2MiB/s:ceil=8MiB/s"); [ -n "$r" ] || note "dd said: $(cat "$T/envrate.log")"; ratio "BONSAI_LIMITS with :ceil= / ceil" "$r" $((8 * MiB)) 0.80 1.10
out=$(BONSAI_SHM_PREFIX=nohost.$$. LD_PRELOAD="$LIB" BONSAI_LIMITS='writes=2MiB/s:ceil=8MiB/s' \
  timeout --foreground -s INT 1.5 dd if=/dev/zero of=/dev/null bs=64k count=1000000 2>&1)
grep -q "no usable host capacity" <<<"$out" || fail "no host: not said: $out"
exit 0
