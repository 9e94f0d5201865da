#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Wrappers called from another library's constructor, preloaded after libbonsai (its
# constructor runs before ours) and before it. All data arrives, every write is
# counted and the cap holds overall.
# sanitized: yes
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_prog ctor_lib write_bytes
export BONSAI_TEST_CTOR_BYTES=$((2 * MiB))
for order in after before; do
  if [ $order = after ]; then pl=$SAN_RT$LIB:$PRE/ctor_lib; else pl=$SAN_RT$PRE/ctor_lib:$LIB; fi
  timed ctor_$order env LD_PRELOAD="$pl" BONSAI_LIMITS='write=2MiB/s' BONSAI_STATS="$T/ctor_$order.json" \
    BONSAI_TEST_CTOR_OUT="$T/ctor_$order.c" "$PRE/write_bytes" "$T/ctor_$order.m" 2M
done
wait

for order in after before; do
  secs=$(timed_ok ctor_$order)
  [ "$(stat -c %s "$T/ctor_$order.c")" -eq $((2 * MiB)) ] || fail "ctor ($order): constructor data short"
  [ "$(tr -d c < "$T/ctor_$order.c" | wc -c)" -eq 0 ] || fail "ctor ($order): constructor data corrupt"
  [ "$(stat -c %s "$T/ctor_$order.m")" -eq $((2 * MiB)) ] || fail "ctor ($order): main data short"
  [ "$(stats_sum "$T/ctor_$order.json" bytes write)" -eq $((4 * MiB)) ] ||
    fail "ctor ($order): counted $(stats_sum "$T/ctor_$order.json" bytes write) write bytes, want $((4 * MiB))"
  check_rate "ctor_lib preloaded $order libbonsai: 4 MiB at write=2MiB/s" $((4 * MiB)) "$secs" $((2 * MiB)) 0.75 1.10
done
