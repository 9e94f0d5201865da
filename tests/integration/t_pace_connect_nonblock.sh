#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A non-blocking connect under a call-rate cap (issue 53; docs/reference/limits.md, "Non-blocking
# descriptors"): unlike a read or write it waits for its token, since it has no result
# that tells an event loop "try again later" (EAGAIN fails an upstream in nginx and a
# transfer in curl). curl --parallel (libcurl: every connect non-blocking, one thread,
# its own event loop) fetches 20 URLs at once under connect=10/s: every transfer
# succeeds, the connects follow the cap (20 in ~1.9 s), and each connect holds curl's
# thread about one token's interval (0.1 s) — the bound for a thread alone on its bucket.
# ~2.5 s.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_cmd curl python3
mkdir -p "$T/www"
echo hello > "$T/www/f"
port=$(free_port)
(cd "$T/www" && exec python3 -m http.server "$port" --bind 127.0.0.1) > "$T/http.log" 2>&1 &
SRV=$!
cleanup_hooks+=("kill $SRV; wait $SRV")
for _ in $(seq 100); do
  curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$port/f" && break
  sleep 0.1
done
urls=()
for i in $(seq 20); do urls+=(-o /dev/null "http://127.0.0.1:$port/f?$i"); done
start=$(now_ns)
limited 'connect=10/s' "$T/s.json" curl -s --parallel --parallel-max 20 --max-time 20 \
  -w '%{http_code} %{time_connect}\n' "${urls[@]}" > "$T/out" 2> "$T/err" || true
secs=$(secs_since "$start")
ok=$(grep -c '^200 ' "$T/out" || true)
[ "$ok" = 20 ] || { cat "$T/out" "$T/err" >&2; fail "$ok of 20 transfers succeeded (a refused connect must not fail them)"; }
check_between "connects throttled" "$(stats_sum "$T/s.json" throttled connect)" 15 20
# 20 connects at 10/s, the first few from the bucket's depth: ~1.9 s.
check_between "seconds for 20 connects at 10/s" "$secs" 1.5 12
# The slowest connect as curl saw it: one token's interval (0.1 s) plus a loaded machine's delay.
slowest=$(awk '$1 == 200 { if ($2 + 0 > m) m = $2 + 0 } END { printf "%.3f", m }' "$T/out")
check_between "slowest connect (s)" "$slowest" 0.05 1.0
exit 0
