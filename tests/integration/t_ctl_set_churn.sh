#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Live changes at a controller's pace (issue 36): buckets keep their state across a
# `set`, sleepers re-time at the new rate. 8 threads of 64 KiB writes in a service scope
# under 4 MiB/s while `set` runs ~50 times a second: the same limit again holds the cap
# (it gave 1.5-7x before), 4 and 8 MiB/s alternating hold the time-weighted mean of the
# caps in force (10x before); so do processes sharing the scope, and a supervised static
# program (writer and reader). Tolerances are wide for CI; bench/scenarios/ctl_churn.sh measures the targets.
# timeout: 70
# parallel: no (a supervisor and 100 bonsaictl set a second need the CPU: the sv case fell to 0.64 of the cap beside other tests)
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd python3
need_prog threads_write write_bytes write_bytes_static sv_static
CHURN="python3 $TLIB/set_churn.py $CTL"

# churn_case NAME LO HI LIMIT...: the rate over ~3 s of churn within [LO, HI] x the mean.
churn_case() {
  local name=$1 lo=$2 hi=$3 out mean rate
  shift 3
  out=$($CHURN "$name" "${CALL:-write}" 3 50 "$@") || fail "$name: set_churn failed"
  mean=$(field "$out" mean); rate=$(field "$out" rate)
  note "$name: $out"
  check_between "$name: rate / mean of the caps in force" "$(awk -v r="$rate" -v m="$mean" 'BEGIN { printf "%.3f", r / m }')" "$lo" "$hi"
}

start_threads() {
  "$CTL" run -s "$1" --scope service -l "$2" -- "$BONSAI_BUILD/preload/threads_write" 8 100000M /dev/null 64K \
    >/dev/null 2>&1 &
  cleanup_hooks+=("kill $! 2>/dev/null")
  wait_attached "$1" 1
  sleep 0.5
}

start_threads same 'write=4MiB/s'
churn_case same 0.90 1.06 'write=4MiB/s'
start_threads alt 'write=4MiB/s'
churn_case alt 0.88 1.06 'write=4MiB/s' 'write=8MiB/s'

# Four processes sharing the scope.
for i in 1 2 3 4; do
  "$CTL" run -s procs --scope service -l 'write=4MiB/s' -- "$BONSAI_BUILD/preload/write_bytes" /dev/null 100000M \
    >/dev/null 2>&1 &
  cleanup_hooks+=("kill $! 2>/dev/null")
done
wait_attached procs 4
sleep 0.5
churn_case procs 0.90 1.06 'write=4MiB/s'

# A supervised static program: held calls are re-timed, not let go.
"$CTL" run -s sv -l 'write=4MiB/s' -- "$BONSAI_BUILD/preload/write_bytes_static" /dev/null 100000M >/dev/null 2>&1 &
cleanup_hooks+=("kill $! 2>/dev/null")
wait_attached sv 1
sleep 0.5
churn_case sv 0.85 1.08 'write=4MiB/s'

# A supervised static reader: a read is charged at the thread's next call, so a change
# between the two must carry it over (it was dropped before).
"$CTL" run -s svread -l 'read=4MiB/s' -- "$BONSAI_BUILD/preload/sv_static" read /dev/zero >/dev/null 2>&1 &
cleanup_hooks+=("kill $! 2>/dev/null")
wait_attached svread 1
sleep 0.5
CALL=read churn_case svread 0.85 1.08 'read=4MiB/s'
exit 0
