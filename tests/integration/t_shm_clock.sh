#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 8, item 8: a skewed or garbage shared bucket clock never stalls a service.
# (a) a process in a time namespace 100000 s ahead joins a scope-service bucket;
# (b) 2^62 is written into the shared bucket's clock while two processes share it.
# Each time both processes keep moving and together hold the cap.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd dd python3

# shares SERVICE: "NS A B": the time, then the bytes written so far by each process.
shares() {
  local t; t=$(now_ns)
  echo "$t $("$CTL" stat "$1" --json | python3 -c '
import json, sys
d = json.loads(sys.stdin.readline())
print(" ".join(str(p["calls"].get("write", {}).get("bytes", 0)) for p in d["processes"]))')"
}

# check_both NAME BEFORE AFTER: both processes moved, together at the cap.
check_both() {
  local name=$1
  set -- $2 $3
  [ $# = 6 ] || fail "$name: expected 2 processes, got: $*"
  local d1=$(($5 - $2)) d2=$(($6 - $3))
  local secs; secs=$(awk -v a="$1" -v b="$4" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
  note "$name: moved $d1 and $d2 bytes in $secs s"
  [ "$d1" -gt $((MiB / 4)) ] || fail "$name: the first process stalled ($d1 bytes in $secs s)"
  [ "$d2" -gt $((MiB / 4)) ] || fail "$name: the second process stalled ($d2 bytes in $secs s)"
  check_rate "$name: two processes, one cap" "$((d1 + d2))" "$secs" $((4 * MiB)) 0.75 1.20
}

# A count unique to this run: the dd under `unshare --time` is unshare's child, which a
# kill of the background job does not reach; the cleanup finds it by its command line.
DD_COUNT=$((100000000 + $$))
dd_in() { "$CTL" run -s "$1" --scope service -l 'write=4MiB/s' -- "${@:2}" dd if=/dev/zero of=/dev/null bs=4k count=$DD_COUNT status=none; }
cleanup_hooks+=("pkill -f 'of=/dev/null bs=4k count=$DD_COUNT' 2>/dev/null")

# (b) garbage clock
dd_in garbage & p1=$!
dd_in garbage & p2=$!
cleanup_hooks+=("kill $p1 $p2 2>/dev/null")
wait_attached garbage 2
sleep 0.5
python3 - "$(seg_file garbage)" <<'PY' || fail "could not find the bucket clock in the segment"
import mmap, struct, sys, time
# The write bucket's tat is the only 64-byte-aligned word near this CLOCK_MONOTONIC.
with open(sys.argv[1], "r+b") as f:
    m = mmap.mmap(f.fileno(), 65536)
    now = time.monotonic_ns()
    hits = [o for o in range(0, 65536, 64) if abs(struct.unpack_from("<Q", m, o)[0] - now) < 60 * 10**9]
    if not hits:
        sys.exit(1)
    for o in hits:
        struct.pack_into("<Q", m, o, 1 << 62)
PY
a=$(shares garbage); sleep 2; b=$(shares garbage)
check_both "garbage clock" "$a" "$b"
kill $p1 $p2 2>/dev/null; wait 2>/dev/null

# (a) a time namespace
if [ "$(id -u)" != 0 ] || ! unshare --time --monotonic 100000 true 2>/dev/null; then
  skip "unshare --time does not work here (needs root and a kernel with time namespaces)"
fi
dd_in timens & p1=$!
dd_in timens unshare --time --monotonic 100000 & p2=$!
cleanup_hooks+=("kill $p1 $p2 2>/dev/null")
wait_attached timens 2
sleep 0.5
a=$(shares timens); sleep 2; b=$(shares timens)
check_both "time namespace" "$a" "$b"
exit 0
