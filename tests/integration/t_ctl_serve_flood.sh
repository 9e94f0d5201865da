#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `bonsaictl serve` keeps answering scrapes while a local user holds 2,000 slow
# half-sent requests open against it (#36): spread over 40 loopback addresses, then all
# from 127.0.0.1 (loopback is exempt from --max-per-address: a local user has all of
# 127/8 anyway, and a Prometheus scraping from 127.0.0.1 must not be shut out), then from
# this host's non-loopback address when it has one (held to --max-per-address, 256).
# Each time five scrapes with curl from 127.0.0.1 must answer 200, each within 5 s
# (within 1 s expected; the times are printed). serve's stderr stays short.
# Then --max-requests 1 with 300 services (a scrape of some 30 ms): of twenty scrapes at
# once the ones beyond the first get 503, and the count comes back down afterwards.
# timeout: 50
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd curl python3

# A non-loopback IPv4 address of this host, if any: serve then listens on every address.
ext=$( (ip -4 -o addr show scope global 2> /dev/null | awk '{ sub("/.*", "", $4); print $4 }';
        hostname -I 2> /dev/null | tr ' ' '\n' | grep -F .) | head -n 1)
port=$(free_port)
listen_at=127.0.0.1:$port
[ -z "$ext" ] || listen_at=:$port
"$CTL" serve --listen "$listen_at" 2> "$T/serve.err" &
serve_pid=$!
cleanup_hooks+=("kill $serve_pid 2>/dev/null")
for _ in $(seq 1 50); do curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" && break; sleep 0.1; done
curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" || fail "serve does not answer: $(cat "$T/serve.err")"

# flood FIRST_ADDR PER_ADDR [ADDR]: 2,000 slow connections from 127.0.0.FIRST_ADDR..
# (or from and to ADDR); waits (up to 30 s) until they are open and prints how many the
# server kept.
flood() {
  rm -f "$T/ready"
  python3 "$TLIB/serve_flood.py" "$port" 2000 "$1" "$2" "$T/ready" 60 ${3:+"$3"} &
  flood_pid=$!
  cleanup_hooks+=("kill $flood_pid 2>/dev/null")
  for _ in $(seq 1 300); do [ -s "$T/ready" ] && break; sleep 0.1; done
  [ -s "$T/ready" ] || fail "the flood did not open its connections in 30 s"
  sleep 2.5  # a trickle round: connections past serve's first look
  note "flood from ${3:-127.0.0.$1..} ($2 per address): $(cat "$T/ready") connections held"
}

# scrapes: five scrapes from 127.0.0.1, each 200 within 5 s; prints the times.
scrapes() {
  local times=() i out
  for i in 1 2 3 4 5; do
    out=$(curl -s -o "$T/scrape.txt" -m 10 -w '%{http_code} %{time_total}' "http://127.0.0.1:$port/metrics") || true
    set -- $out
    [ "${1:-000}" = 200 ] || fail "scrape $i during the flood answered '${out}' ($(tail -n 3 "$T/serve.err"))"
    awk -v t="$2" 'BEGIN { exit !(t < 5) }' || fail "scrape $i took $2 s during the flood"
    times+=("$2")
  done
  note "scrape times (s): ${times[*]}; median $(printf '%s\n' "${times[@]}" | sort -g | sed -n 3p)"
}

flood 2 50
held=$(sed -n 's/^open //p' "$T/ready")
[ "$held" -ge 1900 ] || fail "serve closed the spread flood's connections ($held of 2000 held): the test measures nothing"
scrapes
kill "$flood_pid"; wait "$flood_pid" 2>/dev/null

flood 1 2000
held=$(sed -n 's/^open //p' "$T/ready")
[ "$held" -ge 1900 ] || fail "serve closed connections from 127.0.0.1 ($held of 2000 held): loopback is exempt"
scrapes
kill "$flood_pid"; wait "$flood_pid" 2>/dev/null

if [ -n "$ext" ]; then
  flood 0 2000 "$ext"
  held=$(sed -n 's/^open //p' "$T/ready")
  [ "$held" -le 300 ] || fail "$ext holds $held connections (--max-per-address 256)"
  scrapes
  kill "$flood_pid"; wait "$flood_pid" 2>/dev/null
else
  note "no non-loopback IPv4 address: --max-per-address not checked"
fi

lines=$(wc -l < "$T/serve.err")
[ "$lines" -le 80 ] || fail "serve wrote $lines lines to stderr during the floods (rate limit?)"
kill "$serve_pid"
wait "$serve_pid" || fail "serve did not stop cleanly on SIGTERM"

# --max-requests: 503 beyond it, and every slot given back
{ echo "version: 1"; echo "services:"
  for i in $(seq 1 300); do printf '  s%d:\n    limits:\n      - calls: [writes]\n        rate: 12MB/s\n' "$i"; done
} > "$T/many.yaml"
"$CTL" load "$T/many.yaml" > /dev/null || fail "load of 300 services failed"
port=$(free_port)
"$CTL" serve --listen "127.0.0.1:$port" --max-requests 1 2> "$T/serve.err" &
serve_pid=$!
cleanup_hooks+=("kill $serve_pid 2>/dev/null")
for _ in $(seq 1 50); do grep -q 'metrics on' "$T/serve.err" && break; sleep 0.1; done
for i in $(seq 1 20); do curl -s -o /dev/null -m 10 -w '%{http_code}\n' "http://127.0.0.1:$port/metrics" > "$T/burst.$i" & done
wait_burst=$(jobs -p | grep -v "^$serve_pid$")
for p in $wait_burst; do wait "$p"; done
codes=$(cat "$T"/burst.* | sort | uniq -c | tr -s ' \n' ' ')
note "twenty scrapes at once with --max-requests 1: $codes"
grep -qx 503 "$T"/burst.* || fail "no 503 beyond --max-requests 1 ($codes)"
grep -qx 200 "$T"/burst.* || fail "no scrape of the burst answered ($codes)"
for i in 1 2 3 4 5; do
  [ "$(curl -s -o /dev/null -m 10 -w '%{http_code}' "http://127.0.0.1:$port/metrics")" = 200 ] ||
    fail "a scrape after the burst was refused: a slot was not given back"
done
kill "$serve_pid"
wait "$serve_pid" || fail "serve did not stop cleanly on SIGTERM"
