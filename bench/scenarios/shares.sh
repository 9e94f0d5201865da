#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Shares (issue 38): two tenants under one host capacity, run under shares (a guaranteed
# rate and a ceiling at the capacity) and under hard caps (the same rates, no ceiling).
# A is busy for the first two thirds, B for the last two: A alone, both, B alone. Each
# tenant (share_tenant.c) writes 16 KiB blocks to /dev/null and logs its bytes per 5 ms.
# Reports work conservation (a tenant alone / min(ceil, capacity)), isolation (each with
# both busy / its rate) and B's first 20 ms back from idle / its rate; writes
# $RES/shares.csv (one row per mode and metric), $RES/shares_<mode>_<tenant>.csv and
# $RES/shares.png. Env: SHARES_CAP_MIB (32), SHARES_RATE_A_MIB and SHARES_RATE_B_MIB (half
# the capacity each; smaller rates leave spare capacity to lend with both busy),
# SHARES_SECS (quick 9, full 15).
source "$(dirname "$0")/../lib/common.sh"
service_bench shares
build_helpers  # share_tenant
CAP=${SHARES_CAP_MIB:-32}
RATE_A=${SHARES_RATE_A_MIB:-$((CAP / 2))} RATE_B=${SHARES_RATE_B_MIB:-$((CAP / 2))}
# Full 15 s (30 before): 5 s a third, 100 bins of 50 ms each for conservation and isolation,
# and the return from idle is measured in ms.
if [ "$BENCH" = full ]; then SECS=15; else SECS=9; fi
SECS=${SHARES_SECS:-$SECS}
MS=$((SECS * 1000)) THIRD=$((SECS * 1000 / 3))

yaml() {  # yaml MODE: the capacity and the two tenants, with ceilings under shares
  local ceil=""
  [ "$1" = shares ] && ceil="        ceil: ${CAP}MiB/s"
  cat <<YAML
version: 1
host:
  capacity:
    - calls: [writes]
      rate: ${CAP}MiB/s
services:
YAML
  printf '  %s:\n    scope: service\n    limits:\n      - calls: [writes]\n        rate: %sMiB/s\n%s\n' a "$RATE_A" "$ceil"
  printf '  %s:\n    scope: service\n    limits:\n      - calls: [writes]\n        rate: %sMiB/s\n%s\n' b "$RATE_B" "$ceil"
}

note "shares ($BENCH): capacity ${CAP} MiB/s, rates ${RATE_A} and ${RATE_B} MiB/s; A busy 0-$((2 * THIRD)) ms, B busy $THIRD-$MS ms"
for mode in shares hard; do
  yaml "$mode" >"$BENCH_TMP/$mode.yaml"
  "$CTL" load "$BENCH_TMP/$mode.yaml" >/dev/null || die "load $mode"
  t0=$(python3 -c 'import time; print(time.monotonic_ns() + 500_000_000)')
  "$CTL" run -s a -- "$HELP/share_tenant" "$t0" "$MS" 16384 "0-$((2 * THIRD))" >"$RES/shares_${mode}_a.csv" &
  pids+=($!)
  "$CTL" run -s b -- "$HELP/share_tenant" "$t0" "$MS" 16384 "$THIRD-$MS" >"$RES/shares_${mode}_b.csv" &
  pids+=($!)
  wait "${pids[@]}" || die "a tenant failed ($mode)"
  pids=()
  "$CTL" rm --force a >/dev/null 2>&1; "$CTL" rm --force b >/dev/null 2>&1
done
rm -f "/dev/shm/${BONSAI_SHM_PREFIX}bonsai-host.$(id -u)"
python3 "$BENCH_DIR/report/shares_report.py" "$RES" "$CAP" "$RATE_A" "$RATE_B" "$THIRD" "$MS" || die "report"
command -v gnuplot >/dev/null &&
  gnuplot -e "RES='$RES'; TITLE='capacity $CAP MiB/s, rates $RATE_A and $RATE_B MiB/s'" "$BENCH_DIR/report/plots/shares.gp" 2>/dev/null
echo "shares: $RES/shares.csv $RES/shares.png" >&2
