#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CPU used while throttled: 10 MiB/s of 4 KiB calls for ~5 s, user+sys of the limited
# process (its own rusage) over wall time. bonsai on dd to /dev/null, and the same work
# unthrottled (what the calls cost anyway); peers: pv -L on a pipe of 4 KiB writes,
# trickle on 4 KiB send()s over loopback TCP, bonsai on the same TCP sends.
# Writes results/cpu.csv.
source "$(dirname "$0")/../lib/common.sh"
build_helpers

SECS=2
# Full 5 s (10 before): 12,800 calls at 10 MiB/s; the CPU per run is a rusage total, whose
# resolution (1 ms) is 0.02% of a core over 5 s.
[ "$BENCH" = full ] && SECS=5
CAP=10MiB
CAP_B=$(bytes_of $CAP)
COUNT=$((CAP_B * SECS / 4096))
CSV=$RES/cpu.csv
echo "case,limiter,cap,call_bytes,wall_s,cpu_s,cpu_pct" >"$CSV"
f=$BENCH_TMP/cpu.run

record() {  # CASE LIMITER
  local u s w
  read -r u s w <"$f" || { u=nan s=nan w=nan; }
  echo "$1,$2,$CAP,4096,$w,$(calc "$u + $s" %.4f),$(cpu_pct "$f")" >>"$CSV"
  printf '  %-22s %-8s wall %6s s  cpu %7s s  %6s%% of a core\n' "$1" "$2" "$w" "$(calc "$u + $s" %.4f)" "$(cpu_pct "$f")" >&2
}

note "cpu ($BENCH): $CAP, 4 KiB calls, ${SECS} s each"
: >"$f"
with_cpu "$f" env LD_PRELOAD="$LIB" BONSAI_LIMITS="write=$CAP/s" dd if=/dev/zero of=/dev/null bs=4k count=$COUNT status=none
record "dd -> /dev/null" bonsai
: >"$f"
with_cpu "$f" dd if=/dev/zero of=/dev/null bs=4k count=$COUNT status=none
record "dd -> /dev/null unlimited" none
if command -v pv >/dev/null; then
  : >"$f"
  dd if=/dev/zero bs=4k count=$COUNT status=none | with_cpu "$f" pv -q -L $CAP_B -B 4096 >/dev/null
  record "pipe of 4 KiB writes" pv
fi
: >"$f"
tcp_run "$SECS" "" with_cpu "$f" env LD_PRELOAD="$LIB" BONSAI_LIMITS="send=$CAP/s" "$HELP/tx_threads" -b 4096 >/dev/null
record "loopback TCP send()" bonsai
if command -v trickle >/dev/null; then
  : >"$f"
  tcp_run "$SECS" "" with_cpu "$f" trickle -s -u $((CAP_B / 1024)) "$HELP/tx_threads" -b 4096 >/dev/null
  record "loopback TCP send()" trickle
fi

get() { awk -F, -v c="$1" -v l="$2" -v k="${3:-7}" '$1 == c && $2 == l { print $k }' "$CSV"; }
b=$(get "dd -> /dev/null" bonsai)
peers="pv $(get "pipe of 4 KiB writes" pv)%, trickle $(get "loopback TCP send()" trickle)% (bonsai same TCP run $(get "loopback TCP send()" bonsai)%)"
summary_row "CPU while throttled, $CAP/s, 4 KiB writes" "$b% of a core ($(get "dd -> /dev/null" bonsai 6) s; same calls unthrottled: $(get "dd -> /dev/null unlimited" none 6) s)" \
  "$peers" "<= 2%" "$(verdict le "$b" 2)"
echo "cpu: $CSV" >&2
