#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fleet caps under supervision (issue 49): a supervised static writer follows the lease
# as the library does (runtime/fleet_lapse.h). Four hosts under an 8 MiB/s fleet cap,
# one busy: its grant nears the whole cap. Its agent killed, the lease runs out and the
# supervisor falls back to cap / 4 = 2 MiB/s (it kept the last grant, 7.7 MiB/s, before);
# an agent started again leases again and the writer gets most of the cap back.
# timeout: 50
. "$(dirname "$0")/lib/fleet_lib.sh"
need_prog sv_static

fleet_setup 4 8 "" 20
env BONSAI_SHM_PREFIX="$(ns 1)" timeout 20 "$CTL" run -c "$cfg" -s web -- "$PRE/sv_static" write /dev/null 1024M \
  > /dev/null 2> "$T/sv.err" &
WRITER_PID[1]=$!
cleanup_hooks+=("kill ${WRITER_PID[1]} 2>/dev/null")
sleep 2
kill -0 "${WRITER_PID[1]}" 2>/dev/null || fail "the supervised writer ended: $(cat "$T/sv.err")"
sleep 1
s=$(fleet_sample 4 1.5 0.5)
check_rate "supervised writer, leased, alone" "$(sample_eval "$s" 'int(rate(1))')" 1 "$cap" 0.5 1.10
[ "$(fleet_field 1 'd["processes"][0]["supervised"]')" = True ] || fail "the writer is not supervised: $(cat "$T/sv.err")"

kill "${AGENT_PID[1]}"; wait "${AGENT_PID[1]}" 2>/dev/null
sleep 1.5
s=$(fleet_sample 4 2 0.5)
check_rate "supervised writer, lease run out" "$(sample_eval "$s" 'int(rate(1))')" 1 $((cap / 4)) 0.75 1.15
[ "$(fleet_field 1 'd["fleet"]["fallbacks"]')" -ge 1 ] || fail "the supervisor did not count its fallback"
grep -q 'fleet lease ran out' "$T/sv.err" || fail "the supervisor did not say it fell back: $(cat "$T/sv.err")"

# Leased again: the grant ramps up over a few periods (on a busy machine, more).
fleet_agent_start 1
for _ in 1 2 3 4 5 6; do
  sleep 0.5
  s=$(fleet_sample 4 1 0.5)
  r=$(sample_eval "$s" 'int(rate(1))')
  [ "$r" -ge $((cap / 2)) ] && break
done
check_rate "supervised writer, leased again" "$r" 1 "$cap" 0.5 1.10
exit 0
