#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fio's engines hold a reads and a writes cap (issue 18): psync (pread/pwrite), pvsync2
# (preadv2/pwritev2), libaio (io_submit through syscall()), posixaio (glibc's POSIX AIO,
# iodepth 8) and splice (splice + vmsplice through fio's own pipe: a write is charged at
# both hops, so it runs at half the cap). 2 s per run, time-based on a 16 MiB file; the
# read and the write run of an engine side by side. fio's bandwidth against the cap, and
# the bytes bonsai counted under the engine's call against fio's.
# timeout: 60
. "$(dirname "$0")/lib/lib.sh"
need_cmd fio python3
cap=$((16 * MiB))
make_data "$T/data" 16
# engine:iodepth:read call:write call:hops a written byte is charged at
engines="psync:1:pread:pwrite:1 pvsync2:1:preadv:pwritev:1 libaio:8:pread:pwrite:1 posixaio:8:pread:pwrite:1 splice:1:splice:splice:2"
for e in $engines; do
  IFS=: read -r eng qd rcall wcall hops <<< "$e"
  for dir in read write; do
    file=$T/data lim="reads=16MiB/s"
    [ "$dir" = write ] && file=$T/w.$eng lim="writes=16MiB/s"
    # --thread: the jobs are threads of this process, so its BONSAI_STATS line has them
    timed "$eng.$dir" limited "$lim" "$T/$eng.$dir.json" fio --thread --name=j --filename="$file" \
      --rw="$dir" --bs=64k --size=16M --time_based --runtime=2 --ioengine="$eng" --iodepth="$qd" \
      --output-format=json --output="$T/$eng.$dir.fio"
  done
  wait
  for dir in read write; do
    call=$rcall want=$cap share=1
    [ "$dir" = write ] && call=$wcall want=$((cap / hops)) share=$hops
    timed_ok "$eng.$dir" > /dev/null
    read -r bw io < <(python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))["jobs"][0][sys.argv[2]]
print(j["bw_bytes"], j["io_bytes"])' "$T/$eng.$dir.fio" "$dir") || fail "fio $eng $dir: no result"
    check_rate "fio $eng $dir under ${dir}s=16MiB/s (fio's bw, cap/$share)" "$bw" 1 "$want"
    counted=$(stats_sum "$T/$eng.$dir.json" bytes "$call")
    awk -v c="$counted" -v i="$io" 'BEGIN { exit (c >= 0.95 * i && c <= 1.05 * i + 524288) ? 0 : 1 }' ||
      fail "fio $eng $dir: bonsai counted $counted bytes as $call, fio moved $io"
  done
done
exit 0
