#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Event-loop servers under a cap (issue #35; the BONSAI paper's Fig 11). Each server starts
# on a free 127.0.0.1 port in a service scope, `bonsaictl run -s S --scope service -l
# 'writes=CAP:fd=socket' -- SERVER` (tests/scenarios/eventloop_servers.sh: nginx sendfile on,
# nginx sendfile off, node, python3 asyncio, a static Go net/http.FileServer, supervised).
# N clients (tests/scenarios/paced_clients.py, one process) each read a large file at their own
# 250 KB/s (2 Mbit/s) for SECS seconds, all from one instant; meanwhile a prober fetches a
# 1 KiB file PROBES times with curl, spread over the run, and records each time_total.
# Per server: aggregate (what the clients received) against the cap, the server's writes as
# `bonsaictl stat` counted them (an overrun the paced clients cannot take in fills socket
# buffers), Jain's index over the clients, the slowest client
# against its fair share min(rate, cap / N), clients that got nothing, the 1 KiB requests'
# p50/p99/max; the same load uncapped (the server without bonsai) is the reference. One
# summary row per server, PASS/FAIL on the issue's targets (aggregate within 1% of the cap,
# Jain >= 0.99, slowest >= 0.9 x cap/N, 1 KiB p99 <= 50 ms).
# Compressed rows (issue 53; mode "compressed"): the server also has BONSAI_COMPRESS_TO=127.0.0.1:*
# and serves /text (changelog text, STREAM_TEXT_MIB), its clients and prober are preloaded
# with BONSAI_COMPRESS_ACCEPT=1 (they decode); the clients read at STREAM_COMP_RATE each so that
# the wire, not their pace, binds. Same columns: agg/ratio are decoded bytes (ratio above 1:
# what compression gained over the cap), server_bps/server_ratio the server's wire bytes, the
# fair share min(client rate, aggregate / N); PASS: wire within [0.9, 1.01] x cap, Jain >= 0.99,
# slowest >= 0.9 x fair, every 1 KiB request within 100 ms (lib/streaming_stats.py).
# STREAM_FULL=1 (default when BENCH=full) adds the Fig-11 sweep: N = 10..100 streams under a
# 10 MB/s cap, the per-stream rate against N -> streaming_sweep.csv (streaming_sweep.png
# through plot.sh).
# Writes $RES/streaming.csv (and streaming_sweep.csv). Quick (make bench): N=40, 5 s capped,
# nginx and Go, and nginx compressed, no uncapped reference, ~33 s; full: five servers
# 12 s each, nginx and node compressed, with the
# reference, and the sweep, ~5 min. The published table: STREAM_SERVERS="nginx
# nginx_nosendfile node asyncio go" STREAM_SECS=12 STREAM_REF=1.
# Env: STREAM_SERVERS (full "nginx nginx_nosendfile node asyncio go", quick "nginx go"),
# STREAM_N ("40"; a list runs each), STREAM_CAP (5MB: per second, bonsai's units, MB = 10^6
# B), STREAM_SECS (quick 5, full 12), STREAM_REF (1: uncapped reference runs; 0 none; quick 0), STREAM_REF_SECS
# (6), STREAM_RATE (a client's pace, 250KB), STREAM_PROBES (20), STREAM_PROBE_MAX
# (a probe's timeout, 5 s), STREAM_FILE_MIB (100, sparse), STREAM_FULL, STREAM_SWEEP_N
# ("10 40 100"), STREAM_SWEEP_CAP (10MB), STREAM_SWEEP_SERVERS ("nginx node"),
# STREAM_COMP_SERVERS (full "nginx node", quick "nginx"; "" none), STREAM_COMP_RATE (1MB), STREAM_TEXT_MIB (64),
# STREAM_COMP_POLICY, STREAM_COMP_LEVELS (BONSAI_COMPRESS_POLICY, _LEVELS for the compressing
# servers; unset: the defaults).
source "$(dirname "$0")/../lib/common.sh"
source "$BENCH_DIR/../tests/scenarios/eventloop_servers.sh"
service_bench streaming
command -v curl >/dev/null || die "curl not installed (make deps)"

FULL=${STREAM_FULL:-$([ "$BENCH" = full ] && echo 1 || echo 0)}
# Quick (make bench's 300 s budget): nginx and the supervised Go server, 8 s, no uncapped
# reference (~25 s); full: every server, 20 s, with the reference, and the sweep.
if [ "$FULL" = 1 ]; then SERVERS=${STREAM_SERVERS:-nginx nginx_nosendfile node asyncio go}
else SERVERS=${STREAM_SERVERS:-nginx go}; fi
NS=${STREAM_N:-40}
CAP=${STREAM_CAP:-5MB}
# Full 12 s a run (20 before; the published table's length): 48 windows of a 250 ms client
# bucket for Jain and the slowest client, 20 probes for p99. The uncapped reference is a
# reference, judged by nothing: 6 s as in quick.
if [ "$FULL" = 1 ]; then SECS=${STREAM_SECS:-12}; else SECS=${STREAM_SECS:-5}; fi
if [ "$FULL" = 1 ]; then REF=${STREAM_REF:-1}; else REF=${STREAM_REF:-0}; fi
REF_SECS=${STREAM_REF_SECS:-6}
RATE=${STREAM_RATE:-250KB}
PROBES=${STREAM_PROBES:-20}
PROBE_MAX=${STREAM_PROBE_MAX:-5}
FILE_MIB=${STREAM_FILE_MIB:-100}
# The sweep's three points (six before) are its three regimes under 10 MB/s at 250 KB/s a
# client: below the knee (10: each at its pace), at it (40 = cap / pace), far above (100).
SWEEP_N=${STREAM_SWEEP_N:-10 40 100}
SWEEP_CAP=${STREAM_SWEEP_CAP:-10MB}
SWEEP_SERVERS=${STREAM_SWEEP_SERVERS:-nginx node}
# Quick: nginx's compressed row only (node's in full: -7 s of make bench).
COMP_SERVERS=${STREAM_COMP_SERVERS-$([ "$FULL" = 1 ] && echo "nginx node" || echo nginx)}
COMP_RATE=${STREAM_COMP_RATE:-1MB}
TEXT_MIB=${STREAM_TEXT_MIB:-64}
RATE_B=$(bytes_of "$RATE")
COMP_RATE_B=$(bytes_of "$COMP_RATE")
PY=$(el_python)
WWW=$BENCH_TMP/www
el_files "$WWW" "$FILE_MIB"
if [ -n "$COMP_SERVERS" ]; then  # the compressed rows' file: text, as much as asked (repeated if short)
  ls /usr/share/doc/*/changelog*.gz 2>/dev/null | xargs -r zcat 2>/dev/null | head -c $((TEXT_MIB * 1048576)) >"$WWW/text.1"
  [ -s "$WWW/text.1" ] || die "no changelog text for the compressed rows (set STREAM_COMP_SERVERS= to skip them)"
  while [ "$(stat -c %s "$WWW/text.1")" -lt $((TEXT_MIB * 1048576)) ]; do cat "$WWW/text.1" "$WWW/text.1" | head -c $((TEXT_MIB * 1048576)) >"$WWW/text.2"; mv "$WWW/text.2" "$WWW/text.1"; done
  mv "$WWW/text.1" "$WWW/text"
fi
CSV=$RES/streaming.csv
SWEEP_CSV=$RES/streaming_sweep.csv
echo "server,mode,n,cap_bps,client_bps,secs,agg_bps,ratio,jain,min_bps,max_bps,mean_bps,fair_bps,min_fair,starved,probes,probe_fail,p50_ms,p99_ms,max_ms,verdict,server_bps,server_ratio" >"$CSV"
[ "$FULL" = 1 ] && echo "server,n,cap_bps,client_bps,secs,mean_bps,min_bps,max_bps,ideal_bps,agg_bps,jain,p99_ms" >"$SWEEP_CSV"

# Servers run in sessions of their own (run_one runs in a subshell): their ids go to a file
# the EXIT trap reads; the clients and probes end on their own (SECS, STREAM_PROBE_MAX).
SESSIONS=$BENCH_TMP/sessions
: >"$SESSIONS"
trap 'for s in $(cat "$SESSIONS" 2>/dev/null); do el_stop "$s"; done; service_bench_cleanup' EXIT
trap 'exit 130' INT TERM

# run_one SERVER N CAP SECS [compressed]: one run (CAP "-" uncapped: the server without bonsai);
# prints streaming_stats.py's key=value line (empty when the server did not start).
# `compressed`: the server compresses to its preloaded, decoding clients (/text at COMP_RATE).
run_one() {
  local server=$1 n=$2 cap=$3 secs=$4 comp=${5:-} cap_b=0 port svc prefix=() dir path=/big rate=$RATE_B rx=()
  port=$(el_port)
  svc=st-$server-$n
  dir=$BENCH_TMP/run.$server.$n.$RANDOM
  mkdir -p "$dir"
  if [ "$cap" != - ]; then
    cap_b=$(bytes_of "$cap")
    prefix=("$CTL" run -s "$svc" --scope service -l "writes=$cap/s:fd=socket" --)
  fi
  if [ -n "$comp" ]; then
    svc=stc-$server-$n
    prefix=("$CTL" run -s "$svc" --scope service -l "writes=$cap/s:fd=socket" -- env "BONSAI_COMPRESS_TO=127.0.0.1:*")
    [ -z "${STREAM_COMP_POLICY:-}" ] || prefix+=("BONSAI_COMPRESS_POLICY=$STREAM_COMP_POLICY")
    [ -z "${STREAM_COMP_LEVELS:-}" ] || prefix+=("BONSAI_COMPRESS_LEVELS=$STREAM_COMP_LEVELS")
    path=/text rate=$COMP_RATE_B
    rx=(env LD_PRELOAD="$LIB" BONSAI_COMPRESS_ACCEPT=1)
  fi
  EL_CLIENT_PREFIX=(${rx[@]+"${rx[@]}"})
  el_start "$server" "$port" "$WWW" "$dir" "$HELP" "${prefix[@]}" || return 1
  local cur=$EL_PID
  echo "$cur" >>"$SESSIONS"
  local url=http://127.0.0.1:$port
  if ! el_wait "$url/small" 15; then
    note "$server did not answer on port $port within 15 s:"; tail -5 "$dir/$server.log" >&2
    el_stop "$cur"
    return 0
  fi
  ${rx[@]+"${rx[@]}"} "$PY" "$BENCH_DIR/../tests/scenarios/paced_clients.py" 127.0.0.1 "$port" "$path" "$n" "$rate" "$secs" >"$dir/clients" 2>"$dir/clients.err" &
  local cl=$!
  [ "$cap" = - ] || "$CTL" stat "$svc" --json >"$dir/stat.a" 2>/dev/null
  (  # PROBES 1 KiB requests from 0.5 s to secs - 1 s, each on its own (a slow one delays none)
    gap=$(calc "($secs - 1.5) / ($PROBES > 1 ? $PROBES - 1 : 1)" "%.3f")
    sleep 0.5
    for _ in $(seq "$PROBES"); do
      { t=$(${rx[@]+"${rx[@]}"} curl -s -o /dev/null --max-time "$PROBE_MAX" -w '%{time_total} %{http_code}' "$url/small"); echo "$t $?" >>"$dir/probes"; } &
      sleep "$gap"
    done
    wait
  ) &
  local pr=$!
  wait "$cl"
  [ "$cap" = - ] || "$CTL" stat "$svc" --json >"$dir/stat.b" 2>/dev/null
  wait "$pr"
  el_stop "$cur"
  [ "$cap" = - ] || "$CTL" rm --force "$svc" >/dev/null 2>&1
  [ -s "$dir/clients.err" ] && head -3 "$dir/clients.err" >&2
  python3 "$BENCH_DIR/lib/streaming_stats.py" "$dir/clients" "$dir/probes" "$cap_b" "$rate" "$secs" "$PROBE_MAX" "$dir/stat.a" "$dir/stat.b" $comp
  rm -rf "$dir"
}

mb() { calc "$1 / 1e6" "%.3f"; }
show() {  # SERVER MODE CAP LINE
  local l=$4
  printf '  %-16s %-8s %-6s N=%-3s %7s MB/s (%s x %s; server %s x cap) Jain %s  slowest %s x fair  starved %s  1 KiB p50/p99/max %s/%s/%s ms (failed %s)  %s\n' \
    "$1" "$2" "$3" "$(kv "$l" n)" "$(mb "$(kv "$l" agg_bps)")" "$(kv "$l" ratio)" "$([ "$2" = uncapped ] && echo demand || echo cap)" "$(kv "$l" server_ratio)" \
    "$(kv "$l" jain)" "$(kv "$l" min_fair)" "$(kv "$l" starved)" "$(kv "$l" p50_ms)" "$(kv "$l" p99_ms)" "$(kv "$l" max_ms)" \
    "$(kv "$l" probe_fail)" "$(kv "$l" verdict)" >&2
}
csv_row() {  # SERVER MODE CAP_B SECS LINE [CLIENT_BPS]
  local l=$5 k row
  row="$1,$2,$(kv "$l" n),$3,${6:-$RATE_B},$4"
  for k in agg_bps ratio jain min_bps max_bps mean_bps fair_bps min_fair starved probes probe_fail p50_ms p99_ms max_ms verdict server_bps server_ratio; do
    row="$row,$(kv "$l" "$k")"
  done
  echo "$row" >>"$CSV"
}

if [[ " $SERVERS $([ "$FULL" = 1 ] && echo "$SWEEP_SERVERS") " == *" go "* ]] && el_have go; then
  el_build_go "$HELP" || note "cannot build the Go file server: go skipped"
fi
have() { el_have "$1" && { [ "$1" != go ] || [ -x "$HELP/fileserver" ]; }; }

note "streaming ($([ "$FULL" = 1 ] && echo full || echo quick)): $SERVERS; N=$NS at $RATE/s each, cap writes=$CAP/s:fd=socket (service scope), ${SECS} s capped, ${REF_SECS} s uncapped, $PROBES 1 KiB probes"
for server in $SERVERS; do
  if ! have "$server"; then
    note "$server not installed: skipped"
    summary_row "streaming: $server" "not installed" "-" "-" "skip"
    continue
  fi
  for n in $NS; do
    line=$(run_one "$server" "$n" "$CAP" "$SECS")
    if [ -z "$line" ]; then
      summary_row "streaming: $server, N=$n, $CAP/s" "server did not start" "-" "-" "FAIL"
      continue
    fi
    show "$server" capped "$CAP" "$line"
    csv_row "$server" capped "$(bytes_of "$CAP")" "$SECS" "$line"
    ref="-"
    if [ "$REF" = 1 ]; then
      rl=$(run_one "$server" "$n" - "$REF_SECS")
      if [ -n "$rl" ]; then
        show "$server" uncapped - "$rl"
        csv_row "$server" uncapped 0 "$REF_SECS" "$rl"
        ref="uncapped: $(kv "$rl" ratio) x demand, Jain $(kv "$rl" jain), 1 KiB p99 $(kv "$rl" p99_ms) ms"
      fi
    fi
    summary_row "streaming (#35): $server, $n streams at $RATE/s, writes=$CAP/s:fd=socket service cap, ${SECS} s: aggregate/cap, Jain, slowest/(cap/N), starved, 1 KiB p99" \
      "$(kv "$line" ratio) / $(kv "$line" jain) / $(kv "$line" min_fair) / $(kv "$line" starved) / $(kv "$line" p99_ms) ms" \
      "$ref" "1+-0.01 / >= 0.99 / >= 0.9 / 0 / <= 50 ms" "$([ "$(kv "$line" verdict)" = PASS ] && echo pass || echo FAIL)"
  done
done

# Compressed rows (issue 53): the same load against a server that compresses to its clients.
for server in $COMP_SERVERS; do
  if ! have "$server"; then
    note "$server not installed: compressed row skipped"
    summary_row "streaming compressed: $server" "not installed" "-" "-" "skip"
    continue
  fi
  for n in $NS; do
    line=$(run_one "$server" "$n" "$CAP" "$SECS" compressed)
    if [ -z "$line" ]; then
      summary_row "streaming compressed: $server, N=$n, $CAP/s" "server did not start" "-" "-" "FAIL"
      continue
    fi
    show "$server" compress "$CAP" "$line"
    csv_row "$server" compressed "$(bytes_of "$CAP")" "$SECS" "$line" "$COMP_RATE_B"
    summary_row "streaming compressed (#53): $server, BONSAI_COMPRESS_TO, $n streams at $COMP_RATE/s, writes=$CAP/s:fd=socket, ${SECS} s: wire/cap, decoded/cap, Jain, slowest/fair, 1 KiB max" \
      "$(kv "$line" server_ratio) / $(kv "$line" ratio) / $(kv "$line" jain) / $(kv "$line" min_fair) / $(kv "$line" max_ms) ms" \
      "-" "0.9-1.01 / - / >= 0.99 / >= 0.9 / <= 100 ms" "$([ "$(kv "$line" verdict)" = PASS ] && echo pass || echo FAIL)"
  done
done

if [ "$FULL" = 1 ]; then
  note "streaming sweep (Fig 11): $SWEEP_SERVERS; N=$SWEEP_N under writes=$SWEEP_CAP/s, ${SECS} s"
  for server in $SWEEP_SERVERS; do
    have "$server" || { note "$server not installed: skipped"; continue; }
    for n in $SWEEP_N; do
      line=$(run_one "$server" "$n" "$SWEEP_CAP" "$SECS")
      [ -n "$line" ] || continue
      show "$server" capped "$SWEEP_CAP" "$line"
      cap_b=$(bytes_of "$SWEEP_CAP")
      echo "$server,$n,$cap_b,$RATE_B,$SECS,$(kv "$line" mean_bps),$(kv "$line" min_bps),$(kv "$line" max_bps),$(kv "$line" fair_bps),$(kv "$line" agg_bps),$(kv "$line" jain),$(kv "$line" p99_ms)" >>"$SWEEP_CSV"
    done
  done
  echo "streaming: $SWEEP_CSV" >&2
fi
echo "streaming: $CSV" >&2
