#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# protect: (issue 52, docs/reference/protect.md) on this machine's disk with fio, direct I/O:
# tenant A (service db) 4 KiB random reads at 500 IOPS, tenant B (service batch) two
# 1 MiB sequential readers. Run 1, unmanaged: both without bonsai. Run 2, managed: A
# protected at p99 2500us, B squeezed (reads=4GB/s, floor 5MB/s) by the protect-agent
# `load` starts; B reads on PROTECT_TAIL s after A stops. Prints A's p99 and B's rate in
# both runs, B's rate per second, and how long after A stopped B was back at >= 0.8 x
# its unmanaged rate; and, for comparison, B under static caps (PROTECT_STATIC, default
# "20MiB/s 250MiB/s"; " ": none). B's two files are PROTECT_FILE_MIB each (default 1024;
# direct I/O reads them from the disk whatever their size). Under `make bench`
# (BENCH_RESULTS set) its rows go to the summary; quick: 6 s, no static caps, 256 MiB
# files, B on 4 s after A, A alone not measured (PROTECT_ALONE=0; ~25 s). Usage: BONSAI_BUILD=build bash bench/scenarios/protect.sh [SECONDS]
set -u
secs=${1:-12}
tail_s=${PROTECT_TAIL:-8}
B=${BONSAI_BUILD:?set BONSAI_BUILD to the build directory}
CTL=$(cd "$B" && pwd)/bonsaictl
command -v fio >/dev/null || { echo "fio is missing: make deps" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/var/tmp}/bonsai-protect.XXXXXX")
export BONSAI_SHM_PREFIX="bench-protect.$$."
agent=0
cleanup() {
  [ "$agent" != 0 ] && kill "$agent" 2>/dev/null
  rm -rf "$work" /dev/shm/"${BONSAI_SHM_PREFIX}"bonsai.*
}
trap cleanup EXIT
cd "$work" || exit 1
dd if=/dev/urandom of=a bs=1M count=256 status=none
file_mib=${PROTECT_FILE_MIB:-1024}
dd if=/dev/urandom of=b1 bs=1M count="$file_mib" status=none
dd if=/dev/urandom of=b2 bs=1M count="$file_mib" status=none
dd if=a of=/dev/null bs=4k count=1 iflag=direct status=none 2>/dev/null ||
  { echo "O_DIRECT does not work in $work: set TMPDIR to a disk-backed directory" >&2; exit 1; }
fio_a() { fio --name=a --filename=a --rw=randread --bs=4k --direct=1 --ioengine=psync --rate_iops=500 \
  --runtime="$secs" --time_based --output-format=json --output="$1"; }
fio_b() { fio --name=b --filename=b1:b2 --numjobs=2 --rw=read --bs=1M --direct=1 --ioengine=psync \
  --runtime="$2" --time_based --output-format=json --output="$1" --write_bw_log="$1" --log_avg_msec=1000 > /dev/null; }
a_p99() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["jobs"][0]["read"]; print("%.2f" % (r["clat_ns"]["percentile"]["99.000000"]/1e6))' "$1"; }
# B's MB/s per second of its run (the two readers' logs added up; fio logs KiB/s).
b_series() { paste -d, "$1"_bw.1.log "$1"_bw.2.log | awk -F, '{printf "%d %.0f\n", ($1+500)/1000, ($2+$7)*1.024/1000}'; }
b_mean() { b_series "$1" | awk -v from="$2" -v to="$3" '$1>from && $1<=to {s+=$2; n++} END {printf "%.0f", n ? s/n : 0}'; }

alone_p99=-
if [ "${PROTECT_ALONE:-1}" != 0 ]; then
  echo "== A alone, ${secs} s (the disk's state: other work on the machine shows here)"
  fio_a aa.json > /dev/null
  alone_p99=$(a_p99 aa.json)
  echo "A p99 ${alone_p99} ms"
fi
echo "== unmanaged: A and B without bonsai, ${secs} s"
fio_b ub $((secs + 1)) & bp=$!
sleep 0.5
fio_a ua.json > /dev/null
wait $bp
un_p99=$(a_p99 ua.json); un_b=$(b_mean ub 1 "$secs")
echo "A p99 ${un_p99} ms; B ${un_b} MB/s"

# Static caps on B, for comparison (`run -l`: no controller).
static=""
# (MiB: a byte rate whose rate/128 is not whole 4 KiB pages cuts O_DIRECT reads to EINVAL.)
for cap in ${PROTECT_STATIC-20MiB/s 250MiB/s}; do
  "$CTL" run -s "static$((${#static}))" --scope service -l "reads=$cap" -- fio --name=b --filename=b1:b2 --numjobs=2 --rw=read --bs=1M \
    --direct=1 --ioengine=psync --runtime=$((secs + 1)) --time_based --output-format=json --output=sb \
    --write_bw_log=sb --log_avg_msec=1000 > /dev/null & bp=$!
  sleep 0.5
  fio_a sa.json > /dev/null
  wait $bp
  echo "== B capped at $cap (static): A p99 $(a_p99 sa.json) ms; B $(b_mean sb 1 "$secs") MB/s"
  static="$static $cap:$(a_p99 sa.json)ms:$(b_mean sb 1 "$secs")MB/s"
done

cat > p.yaml <<'YAML'
version: 1
services:
  db:
    protect: {calls: [pread], p99: 2500us, squeeze: [batch]}
  batch:
    scope: service
    limits:
      - {calls: [reads], rate: 4GB/s, floor: 5MB/s}
YAML
"$CTL" load p.yaml > load.out || { cat load.out; exit 1; }
for _ in $(seq 1 50); do
  agent=$("$CTL" stat db --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["protect"]["controller_pid"])')
  [ "$agent" != 0 ] && break
  sleep 0.1
done
# PROTECT_AGENT_LOG=FILE: the agent's decisions kept there (load's agent, which writes
# nowhere, is replaced by one started here).
if [ -n "${PROTECT_AGENT_LOG:-}" ] && [ "$agent" != 0 ]; then
  kill "$agent"
  for _ in $(seq 1 50); do kill -0 "$agent" 2>/dev/null || break; sleep 0.1; done
  "$CTL" protect-agent p.yaml > "$PROTECT_AGENT_LOG" 2>&1 & agent=$!
  sleep 0.3
fi
echo "== managed: A protected at p99 2.5 ms, B squeezed by protect-agent pid $agent; B goes on ${tail_s} s after A"
"$CTL" run -s batch -- fio --name=b --filename=b1:b2 --numjobs=2 --rw=read --bs=1M --direct=1 --ioengine=psync \
  --runtime=$((secs + 1 + tail_s)) --time_based --output-format=json --output=mb --write_bw_log=mb --log_avg_msec=1000 \
  > /dev/null & bp=$!
sleep 0.5
"$CTL" run -s db -- fio --name=a --filename=a --rw=randread --bs=4k --direct=1 --ioengine=psync --rate_iops=500 \
  --runtime="$secs" --time_based --output-format=json --output=ma.json > /dev/null
wait $bp
m_p99=$(a_p99 ma.json); m_b=$(b_mean mb 1 "$secs")
echo "A p99 ${m_p99} ms; B ${m_b} MB/s while A ran"
echo "B per second (s MB/s):"; b_series mb | tr '\n' ';'; echo
back=$(b_series mb | awk -v a_end=$((secs + 1)) -v want="$un_b" '$1>a_end && $2>=0.8*want {print $1-a_end; exit}')
echo "B back at >= 0.8 x unmanaged (${un_b} MB/s) ${back:-never} s after A stopped"
echo "RESULT static=[${static# }] alone_a_p99_ms=$alone_p99 unmanaged_a_p99_ms=$un_p99 unmanaged_b_mbs=$un_b managed_a_p99_ms=$m_p99 managed_b_mbs=$m_b recovery_s=${back:-never}"
# make bench: the issue's bars in the summary (measurement, bonsai, peer, target, verdict).
if [ -n "${BENCH_RESULTS:-}" ] && [ -d "$BENCH_RESULTS" ]; then
  ok() { awk "BEGIN { exit !($1) }" && echo pass || echo FAIL; }
  {
    printf 'protect: A p99 managed (4 KiB randread 500/s, target 2.5 ms; unmanaged B: %s ms)\t%s ms\t-\t<= 3.0 ms\t%s\n' \
      "$un_p99" "$m_p99" "$(ok "$m_p99 <= 3.0 && $un_p99 > 3.0")"
    printf 'protect: B read while A ran, managed (unmanaged %s MB/s)\t%s MB/s\t-\t>= 150 MB/s\t%s\n' \
      "$un_b" "$m_b" "$(ok "$m_b >= 150")"
    printf 'protect: B back at >= 0.8 x unmanaged after A stopped\t%s s\t-\t<= 5 s\t%s\n' \
      "${back:-never}" "$(ok "${back:-99} <= 5")"
  } >> "$BENCH_RESULTS/summary.tsv"
fi
