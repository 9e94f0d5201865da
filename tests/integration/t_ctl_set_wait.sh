#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# set --wait on a real service (issue 8, item 10): idle processes (sleep under the
# library, like nginx's master and idle workers), a SIGKILLed one and a throttled dd.
# It used to count the idle and the dead as "not applied" (exit 1 every time). Only
# processes asleep in a wait under the old limits matter: the others apply the new
# ones on their next call. Bad --wait values are usage errors (exit 2).
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd dd sleep

# An idle member: a call (the redirection's open and close) attaches it, then it sleeps.
IDLE='exec 3< /dev/null; exec 3<&-; exec sleep 60'
"$CTL" run -s w -l 'write=1MiB/s' -- sh -c "$IDLE" &
p1=$!
"$CTL" run -s w -- sh -c "$IDLE" &
p2=$!
# 256 KiB writes at 1 MiB/s: dd sleeps ~250 ms per write, so it is almost always
# asleep in a wait when set runs (with 4 KiB writes it was between two waits often
# enough on a loaded CI machine to be counted idle, which is right but not what
# this test wants to see).
"$CTL" run -s w -- dd if=/dev/zero of=/dev/null bs=256k count=100000 status=none &
p3=$!
"$CTL" run -s w -- sh -c "$IDLE" &
p4=$!
cleanup_hooks+=("kill $p1 $p2 $p3 $p4 2>/dev/null")
wait_attached w 4
kill -9 $p4
wait $p4 2>/dev/null
sleep 0.5

out=$("$CTL" set --wait=3000 w 'write=2MiB/s' 2> "$T/err") || fail "set --wait failed: $out $(cat "$T/err")"
note "$out"
printf '%s\n' "$out" | grep -q 'applied by 3 processes' || fail "set --wait did not count the 3 live processes: $out"
# 2 idle (the sleeps) and dd waited for; 3 only if dd was between two of its
# waits at that instant (then it applies the limits on its next call, checked below).
printf '%s\n' "$out" | grep -q '[23] idle' || fail "set --wait did not say 2 are idle: $out"
# The dd applied the new limits, the killed process was reclaimed.
[ "$(jq_stat w 'len(d["processes"])')" = 3 ] || fail "processes attached: $(jq_stat w 'len(d["processes"])')"
[ "$(jq_stat w 'd["exited"]["processes"]')" = 1 ] || fail "the killed process was not reclaimed"
seq=$(jq_stat w 'd["limits_seq"]')
[ "$(jq_stat w "[p['limits_seq'] for p in d['processes'] if p['comm'] == 'dd'][0]")" = "$seq" ] ||
  fail "dd did not install limits #$seq"
"$CTL" set --wait w 'write=4MiB/s' > /dev/null || fail "a second set --wait failed"

for bad in abc -5 99999999 1.5 ''; do
  "$CTL" set "--wait=$bad" w 'write=1MiB/s' > /dev/null 2>&1; rc=$?
  [ $rc = 2 ] || fail "--wait=$bad exited $rc (want 2)"
done
exit 0
