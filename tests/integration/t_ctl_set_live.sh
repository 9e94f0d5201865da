#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bonsaictl set mid-run (issue 3): a dd writing under 1 MiB/s is raised to 4 MiB/s
# while it runs; the rate measured from `stat` before and after follows, and
# `set --wait` reports that the process applied the change.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd dd python3

"$CTL" run -s live -l 'write=1MiB/s' -- dd if=/dev/zero of=/dev/null bs=4k count=1000000 status=none &
pid=$!
cleanup_hooks+=("kill $pid 2>/dev/null")
wait_attached live 1
sleep 0.5
a=$(sample live write); sleep 1.5; b=$(sample live write)
slow=$(rate_between "$a" "$b")
out=$("$CTL" set --wait live 'write=4MiB/s') || fail "set --wait: $out"
note "$out"
printf '%s\n' "$out" | grep -q 'applied by 1 process' || fail "set --wait did not report the process"
sleep 0.3
c=$(sample live write); sleep 1.5; d=$(sample live write)
fast=$(rate_between "$c" "$d")
kill $pid; wait $pid 2>/dev/null
check_rate "before set" "$slow" 1 $MiB 0.75 1.10
check_rate "after set" "$fast" 1 $((4 * MiB)) 0.75 1.10
# The killed dd never ran its destructor: stat reclaims its slot, its counts stay.
[ "$(jq_stat live 'len(d["processes"])')" = 0 ] || fail "killed process still attached"
[ "$(jq_stat live 'd["exited"]["processes"]')" = 1 ] || fail "killed process not folded into exited"
[ "$(total_bytes live write)" -ge "$(echo "$d" | cut -d' ' -f2)" ] || fail "total lost the killed process's bytes"
exit 0
