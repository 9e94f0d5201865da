#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A byte cap raised live under a compressing sender (issue 12): at 5 MiB/s the datarate
# policy settles on a dear zstd level, link-bound; raised to 100 MiB/s that level is
# CPU-bound and cheaper levels move more. The policy must be free to go down: its
# link-ceiling veto reads the cap's current rate, not the link it measured before, and a
# changed cap restarts the policy (back-offs earned at 5 MiB/s held the dear level for
# 3-13 s). Checked by the chunks sent per level.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd zcat python3
PEER=$PRE/compress_peer  # built by the Makefile from tests/preload/compress_peer.c
[ -x "$PEER" ] || fail "no $PEER: make it (make test-integration builds it)"
changelog_text "$T/text" 16
[ "$(stat -c %s "$T/text")" -ge $((8 * MiB)) ] || skip "not enough changelog text on this machine"

env LD_PRELOAD="$PRELOAD" BONSAI_COMPRESS_ACCEPT=1 "$PEER" --listen 0 --port-file "$T/port" --recv /dev/null > /dev/null &
rpid=$!
cleanup_hooks+=("kill $rpid 2>/dev/null")
for i in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
[ -s "$T/port" ] || fail "receiver did not start"
BONSAI_LIB=$LIB BONSAI_COMPRESS_TO=127.0.0.1:* BONSAI_COMPRESS_STATS="$T/cstats" \
  "$CTL" run -s livecap -l 'writes=5MiB/s' -- "$PEER" --connect "$(cat "$T/port")" --send "$T/text" \
  --size 131072 --duration 6000 > "$T/res" 2> "$T/err" &
spid=$!
cleanup_hooks+=("kill $spid 2>/dev/null")
wait_attached livecap 1
sleep 1.5
"$CTL" set livecap 'writes=100MiB/s' > /dev/null || fail "set failed"
wait $spid || fail "sender failed: $(cat "$T/err")"
wait $rpid || fail "receiver failed"
# level_chunks: chunks per level of none,lz4,zstd:1,zstd:3,zstd:5,zstd:6,zstd:9.
read -r before after < <(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d["tx_app_bytes"] > 0:
        c = d["level_chunks"]
        print(sum(c[5:]), sum(c[:5]))' "$T/cstats")
note "chunks at zstd:6 and zstd:9: ${before:-?}; at zstd:5 and cheaper: ${after:-?} ($(sed 's/.*mibps=/mibps=/' "$T/res"))"
[ "${before:-0}" -gt 0 ] || fail "the 5 MiB/s cap did not put the sender on a dear level"
[ "${after:-0}" -gt 0 ] || fail "after the cap was raised to 100 MiB/s the sender never left its dear level"
# Raised after 1.5 s of 6: the policy restarts at once, so most chunks go at cheap levels
# (11,000 against 430 here; 0-4,700 against 1,500-3,500 when back-offs earned at
# 5 MiB/s held it).
[ "$after" -gt "$before" ] || fail "after the raise the sender was slow to leave its dear level ($after against $before chunks)"
exit 0
