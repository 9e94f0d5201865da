#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Shares (issue 38) for a supervised static program: the supervisor charges its writes
# through the same core as the library (bucket/share.h). Alone it borrows up to the
# capacity; beside a busy library-run tenant it keeps its rate and the other keeps its.
# timeout: 30
. "$(dirname "$0")/lib/shares_lib.sh"
need_prog sv_static
shares_yaml 16 4 8
out=$("$CTL" run -s a -- "$PRE/sv_static" write "$T/out" 32M 2>"$T/err") || fail "supervised write: $(cat "$T/err")"
check_rate "supervised A alone / capacity" $((32 * MiB)) "$(field "$out" secs)" "$CAP" 0.80 1.10
[ "$(jq_stat a 'd["shares"][0]["borrowed_bytes"] > 8 * 1048576')" = True ] || fail "the supervised A borrowed little"
writer b null; pb=$!
wait_attached b 1
sleep 0.3
b1=$(sample_w b)
out=$("$CTL" run -s a -- "$PRE/sv_static" write "$T/out" 16M 2>"$T/err") || fail "supervised write: $(cat "$T/err")"
b2=$(sample_w b)
secs=$(field "$out" secs)
check_rate "supervised A with B busy / its rate" $((16 * MiB)) "$secs" "$RATE_A" 0.90 3.2
ratio "B beside the supervised A / its rate" "$(rate_between "$b1" "$b2")" "$RATE_B" 0.90 1.6
stop_writer $pb
exit 0
