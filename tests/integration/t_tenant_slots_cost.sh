#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Forged slots cost the host a bounded amount (issue 58, item 6). A tenant that maps its
# service's segment (a container with the device) writes 1,023 slots naming the host's
# pid 1 with its real start time, in the host's pid namespace: indistinguishable from
# live host processes, so the table is full. Then a process start of the service (a
# fork and an exec of `cat /dev/null`, 100 times: a process claims its slot at its first
# interposed call) costs within 1.5x of the same loop in a clean
# service (best of 3 each, alternately: the machine's load moves between loops). 0.2.0:
# 4.1-5.4x; one pread pass a claim: 1.3-1.6x; a claim that knows it holds no slot (a fork
# child, an exec told by BONSAI_SLOT) looking at 16 slots of a table found full:
# 0.83-1.02x (load 13-21). 10 starts read 21,609 slots before, 1,449 after. It reads
# /proc/1/stat at most once per claim (it read it once per forged slot, twice per
# start), and says "no free slot" a few times in all, not once
# per process; `stat` reads /proc once, not once per slot, and reclaims none of the
# forged slots (they may be live host processes).
# timeout: 180
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd python3 strace

N=100
loop() {  # SERVICE: ms for N execs of /bin/true under the service
  local t0 t1
  t0=$(now_ns)
  "$CTL" run -s "$1" -- bash -c 'for i in $(seq '$N'); do cat /dev/null; done' 2>> "$T/loop.$1.err" || fail "loop in $1"
  t1=$(now_ns)
  echo $(((t1 - t0) / 1000000))
}

# Members that attach (a process attaches at its first interposed call: the
# redirection's open and close), then sleep.
"$CTL" run -s c -l 'write=1GiB/s' -- sh -c 'exec 3< /dev/null; exec 3<&-; exec sleep 600' &
cp=$!
"$CTL" run -s f -l 'write=1GiB/s' -- sh -c 'exec 3< /dev/null; exec 3<&-; exec sleep 600' &
anchor=$!
cleanup_hooks+=("kill $cp $anchor 2>/dev/null")
wait_attached f 1
wait_attached c 1
init_start=$(awk '{print $22}' /proc/1/stat)
ns=$(stat -L -c %i /proc/self/ns/pid)
python3 "$TLIB/tenant_slots.py" "$(seg_file f)" forge "$anchor" 0 1 "$init_start" "$ns" 1024 ||
  fail "could not forge the slots"
[ "$(jq_stat f 'len(d["processes"])')" = 1024 ] || fail "stat does not list the 1024 slots: $("$CTL" stat f | head -5)"

# Claims: /proc/1/stat read at most once per claim (two claims per start: fork, exec).
strace -f -qq -e trace=openat,open,pread64 -o "$T/claims.trace" \
  "$CTL" run -s f -- bash -c 'for i in 1 2 3 4 5 6 7 8 9 10; do cat /dev/null; done' 2> /dev/null
reads=$(grep -c '"/proc/1/stat"' "$T/claims.trace")
note "10 starts with 1,024 forged slots: /proc/1/stat read $reads times"
[ "$reads" -le 25 ] || fail "10 process starts read /proc/1/stat $reads times (at most one per claim: 22)"
# Slots read: bash's first claim reads every slot (it knows nothing of its own), then
# each fork child and each exec knows it holds none and reads a window of 16 (measured
# 1,449 in all; a whole pass each before: 21,609).
preads=$(grep -c 'pread64(' "$T/claims.trace")
note "10 starts with 1,024 forged slots: $preads slot reads (pread)"
[ "$preads" -le 3000 ] || fail "10 process starts read $preads slots (a whole pass for the first claim, 16 for each later one: ~1,400)"

# The start cost, alternately clean and forged (the machine's load moves in between).
best_c=999999 best_f=999999
for round in 1 2 3; do
  c=$(loop c); f=$(loop f)
  note "round $round: $N execs in $c ms (clean), $f ms (1,024 forged slots)"
  [ "$c" -lt "$best_c" ] && best_c=$c
  [ "$f" -lt "$best_f" ] && best_f=$f
done
ratio=$(awk -v f="$best_f" -v c="$best_c" 'BEGIN { printf "%.2f", f / c }')
note "best of 3: forged/clean = $best_f/$best_c ms = ${ratio}x"
awk -v r="$ratio" 'BEGIN { exit !(r <= 1.5) }' || fail "process starts with forged slots cost ${ratio}x (want <= 1.5x)"
lines=$(grep -c 'no free slot' "$T/loop.f.err")
note "'no free slot' said $lines times for $((6 * N + 3)) processes that found none"
[ "$lines" -le 16 ] || fail "'no free slot' said $lines times (log2 of the count: a few)"

# stat: one pass over /proc, not one per slot, and nothing that may be live is reclaimed.
t0=$(now_ns)
strace -f -qq -e trace=openat,open -o "$T/stat.trace" "$CTL" stat f --json > "$T/stat.json" || fail "stat f"
t1=$(now_ns)
reads=$(grep -c '"/proc/1/stat"' "$T/stat.trace")
note "stat of 1,024 forged slots (under strace): $(((t1 - t0) / 1000000)) ms, /proc/1/stat read $reads times"
[ "$reads" -le 3 ] || fail "stat read /proc/1/stat $reads times (one pass over /proc: 1)"
python3 - "$T/stat.json" <<'PY' || fail "stat f: $(head -c 600 "$T/stat.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["processes"]) == 1024, len(d["processes"])
assert d["exited"]["processes"] == 0, d["exited"]  # nothing folded: pid 1 with its start time is alive
assert d["uncounted_processes"] > 0, d["uncounted_processes"]
PY
t0=$(now_ns)
"$CTL" stat f > /dev/null || fail "stat f (table)"
t1=$(now_ns)
note "stat (table) of 1,024 forged slots: $(((t1 - t0) / 1000000)) ms"
