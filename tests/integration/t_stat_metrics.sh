#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Observability (issue 10): `stat --prometheus` passes promtool; `stat --pid` finds a
# process's service; `bonsaictl serve` answers /metrics, and a real Prometheus server
# scraping it every second computes a PromQL rate of bytes equal to the cap.
# timeout: 60
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd dd python3 curl promtool prometheus

# (a) the text format, checked by promtool, while a capped dd runs
"$CTL" run -s web -l 'writes=4MiB/s,open=100/s,read=1MiB/s:fd=pipe' -- \
  dd if=/dev/zero of=/dev/null bs=64k count=192 status=none &
dd_pid=$!
wait_attached web 1
"$CTL" stat --prometheus > "$T/prom.txt" || fail "stat --prometheus failed"
promtool check metrics < "$T/prom.txt" > "$T/promtool.out" 2>&1 || fail "promtool: $(cat "$T/promtool.out")"
grep -q '^bonsai_bytes_total{service="web",call="write"} [0-9]' "$T/prom.txt" || fail "no write bytes: $(cat "$T/prom.txt")"
grep -q '^bonsai_limit_bytes_per_second{service="web",call="read",fd="pipe"} 1048576$' "$T/prom.txt" ||
  fail "the read limit is missing: $(grep limit "$T/prom.txt")"
grep -q '^bonsai_limit_calls_per_second{service="web",call="open",fd="any"} 100$' "$T/prom.txt" || fail "open limit missing"
grep -q '^bonsai_processes{service="web"} 1$' "$T/prom.txt" || fail "processes gauge: $(grep processes "$T/prom.txt")"
# Held writes are in the wait histogram (library side), cumulative up to +Inf = _count
grep -q '^bonsai_wait_seconds_bucket{service="web",call="write",le="+Inf"} [1-9]' "$T/prom.txt" ||
  fail "no wait histogram for the held writes: $(grep wait_seconds "$T/prom.txt")"

# (b) stat --pid
out=$("$CTL" stat --pid "$dd_pid") || fail "stat --pid $dd_pid failed"
case $out in *"attached to service web"*) ;; *) fail "stat --pid: $out" ;; esac
"$CTL" stat --pid "$dd_pid" --json | python3 -c '
import json, sys
d = json.loads(sys.stdin.readline())
assert d["service"] == "web" and len(d["processes"]) == 1 and d["processes"][0]["comm"] == "dd", d' ||
  fail "stat --pid --json"
rc=0; "$CTL" stat --pid 1 > /dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "stat --pid of an unattached process exited $rc, not 1"
"$CTL" stat web --json | python3 -c '
import json, sys
w = json.loads(sys.stdin.readline())["total"]["calls"]["write"]
assert 0 < w["wait_p50_ns"] <= w["wait_p99_ns"] < 10**10, w' || fail "stat --json has no wait p50/p99: $("$CTL" stat web --json)"
"$CTL" stat web | grep -q 'P99 WAIT' || fail "the stat table has no P99 WAIT column"
wait "$dd_pid"
# Counters do not go backwards when the process exits (exited totals are included).
"$CTL" stat --prometheus > "$T/prom2.txt"
a=$(sed -n 's/^bonsai_bytes_total{service="web",call="write"} //p' "$T/prom.txt")
b=$(sed -n 's/^bonsai_bytes_total{service="web",call="write"} //p' "$T/prom2.txt")
[ "$b" -ge "$a" ] && [ "$b" = $((192 * 65536)) ] || fail "write bytes went from $a to $b (12 MiB expected)"

# (b2) a process name in UTF-8 comes out of stat --json as that name (nlohmann-json)
cp "$(command -v dd)" "$T/dé"
"$CTL" run -s utf -l 'write=1MiB/s' -- "$T/dé" if=/dev/zero of=/dev/null bs=64k count=32 status=none &
utf_pid=$!
wait_attached utf 1
"$CTL" stat utf --json | python3 -c '
import json, sys
d = json.loads(sys.stdin.readline())
assert d["processes"][0]["comm"] == "d\u00e9", d["processes"]' || fail "a UTF-8 process name is mangled: $("$CTL" stat utf --json)"
wait "$utf_pid"

# (c) serve + a real Prometheus server scraping it every second
port=$(free_port)
"$CTL" serve --listen "127.0.0.1:$port" 2> "$T/serve.err" &
serve_pid=$!
cleanup_hooks+=("kill $serve_pid 2>/dev/null")
for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$port/metrics" > /dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$port/metrics" | promtool check metrics > /dev/null 2>&1 || fail "/metrics does not pass promtool"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/other")
[ "$code" = 404 ] || fail "GET /other answered $code"

"$CTL" run -s stream -l 'write=4MiB/s' -- dd if=/dev/zero of=/dev/null bs=64k count=100000 status=none &
stream_pid=$!
cleanup_hooks+=("kill $stream_pid 2>/dev/null")
pport=$(free_port)
cat > "$T/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: bonsai
    static_configs:
      - targets: ['127.0.0.1:$port']
YML
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
  --web.listen-address="127.0.0.1:$pport" > "$T/prometheus.log" 2>&1 &
prom_pid=$!
cleanup_hooks+=("kill $prom_pid 2>/dev/null; wait $prom_pid 2>/dev/null")
query() {
  curl -sf --get "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}
rate=""
for _ in $(seq 1 40); do  # up to 20 s for Prometheus to start and hold 6 s of samples
  sleep 0.5
  rate=$(query 'rate(bonsai_bytes_total{service="stream",call="write"}[5s])' 2>/dev/null) || rate=""
  n=$(query 'count_over_time(bonsai_bytes_total{service="stream",call="write"}[10s])' 2>/dev/null) || n=""
  [ -n "$rate" ] && [ -n "$n" ] && [ "$n" -ge 6 ] && break
done
[ -n "$rate" ] || fail "Prometheus never computed the rate: $(tail -5 "$T/prometheus.log")"
check_between "PromQL rate(bonsai_bytes_total[5s]) / cap" "$(awk -v r="$rate" 'BEGIN { printf "%.3f", r / 4194304 }')" 0.9 1.1
kill "$serve_pid"
wait "$serve_pid" || fail "serve did not stop cleanly on SIGTERM"
grep -q stopped "$T/serve.err" || fail "serve said nothing on SIGTERM"
exit 0
