#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fio engines under a cap, side by side: psync (pread64), vsync (readv), pvsync2
# (preadv64v2), libaio (io_submit through syscall()) at reads=4MiB/s, splice (splice +
# vmsplice) at reads+writes=8MiB/s. 8 MiB each; fio's bandwidth and our counters agree.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_cmd fio
make_data "$T/file" 8
engines="psync:pread vsync:readv pvsync2:preadv libaio:pread splice:vmsplice"
for e in $engines; do
  eng=${e%%:*}
  lim='reads=4MiB/s'
  [ "$eng" = splice ] && lim='reads+writes=8MiB/s'
  # --thread: jobs run as threads of this process, so its BONSAI_STATS line has them
  timed "$eng" limited "$lim" "$T/$eng.json" fio --thread --name=j --filename="$T/file" --rw=read \
    --bs=64k --size=8M --ioengine="$eng" --output-format=json --output="$T/$eng.fio"
done
wait
for e in $engines; do
  eng=${e%%:*} call=${e#*:}
  timed_ok "$eng" > /dev/null
  bw=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["read"]["bw_bytes"])' "$T/$eng.fio")
  check_rate "fio $eng (fio's bw)" "$bw" 1 $((4 * MiB))
  [ "$(stats_sum "$T/$eng.json" bytes "$call")" -eq $((8 * MiB)) ] || fail "fio $eng: $call bytes not counted"
done
