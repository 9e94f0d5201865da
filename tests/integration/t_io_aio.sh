#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# POSIX AIO is capped (issue 18 item 2): aio_read/aio_write/lio_listio with 8 requests
# in flight hold a reads and a writes cap (prepaid at submission, charged as pread and
# pwrite); short reads at end of file are charged what moved (given back at aio_return,
# at aio_error, or after a LIO_WAIT batch); cancelled requests are given back; the 64
# names (aio_rw64) likewise. No cap: as fast as ever, still counted.
# sanitized: yes
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_prog aio_rw aio_rw64
imports "$PRE/aio_rw" aio_read aio_write lio_listio aio_error aio_return aio_cancel
imports "$PRE/aio_rw64" aio_read64 aio_write64 lio_listio64 aio_error64 aio_return64
cap=$((8 * MiB))
make_data "$T/r16" 16
head -c 40960 /dev/urandom > "$T/small"  # 40 KiB: a 256 KiB request moves 40 KiB

# name|limits|program args (run side by side: each process has its own buckets)
cases=(
  "read|reads=8MiB/s|aio_rw read $T/r16 8 128K"
  "write|writes=8MiB/s|aio_rw write $T/w16 16 8 128K"
  "lio_read|reads=8MiB/s|aio_rw lio_read $T/r16 8 128K"
  "lio_write|writes=8MiB/s|aio_rw lio_write $T/w16b 16 8 128K"
  "eof|reads=8MiB/s|aio_rw eof $T/small 400 2 256K"
  "eof_wait|reads=8MiB/s|aio_rw eof_wait $T/small 400 2 256K"
  "read64|reads=8MiB/s|aio_rw64 read $T/r16 8 128K"
  "write64|writes=8MiB/s|aio_rw64 write $T/w16c 16 8 128K"
  "eof64|reads=8MiB/s|aio_rw64 eof $T/small 400 2 256K"
)
run_case() {
  local name=$1 lim=$2 prog=$3
  shift 3
  limited "$lim" "$T/$name.json" "$PRE/$prog" "$@" > "$T/$name.out" 2> "$T/$name.err"
  echo $? > "$T/$name.rc"
}
for group in "0 1 2" "3 4 5" "6 7 8"; do
  for i in $group; do
    IFS='|' read -r name lim args <<< "${cases[$i]}"
    # shellcheck disable=SC2086
    run_case "$name" "$lim" $args &
  done
  wait
done

for c in "${cases[@]}"; do
  IFS='|' read -r name lim args <<< "$c"
  [ "$(cat "$T/$name.rc")" = 0 ] || fail "$name: exited $(cat "$T/$name.rc"): $(cat "$T/$name.err")"
  out=$(cat "$T/$name.out")
  note "$name: $out"
  bytes=$(field "$out" bytes)
  check_rate "aio $name: $lim" "$bytes" "$(field "$out" secs)" "$cap"
  case $lim in reads*) call=pread ;; *) call=pwrite ;; esac
  counted=$(stats_sum "$T/$name.json" bytes "$call")
  [ "$counted" = "$bytes" ] || fail "$name: $counted bytes counted as $call, $bytes moved"
done
# Short reads: 400 requests of 256 KiB moved 400 x 40 KiB (charged as requested they
# would have taken 12.5 s, checked by the rate above); every request counted once.
[ "$(stats_sum "$T/eof.json" calls pread)" = 400 ] || fail "eof: $(stats_sum "$T/eof.json" calls pread) pread calls counted, 400 made"
same_data "$T/w16" "$T/w16b"

# aio_cancel: 16 requests of 1 MiB queued behind a read blocked on a pipe are prepaid
# (~1 s at 16 MiB/s), cancelled, and given back: 16 MiB read afterwards go at once
# (without the refund they would take ~1 s).
out=$(limited "reads=16MiB/s" "$T/cancel.json" "$PRE/aio_rw" cancel "$T/r16" 16 1M) || fail "cancel: aio_rw failed"
note "cancel: $out"
[ "$(field "$out" cancelled)" = 16 ] || fail "cancel: not every request was cancelled"
check_between "cancel: 16 MiB read after the refund (s)" "$(field "$out" secs)" 0 0.5
out=$(limited "reads=16MiB/s" "$T/cancel64.json" "$PRE/aio_rw64" cancel "$T/r16" 16 1M) || fail "cancel: aio_rw64 failed"
check_between "cancel (64): 16 MiB read after the refund (s)" "$(field "$out" secs)" 0 0.5

# No cap: fast, and still counted under pread/pwrite.
out=$(limited "" "$T/nocap.json" "$PRE/aio_rw" eof "$T/small" 400 2 256K) || fail "no cap: aio_rw failed"
check_between "no cap: 400 short reads (s)" "$(field "$out" secs)" 0 1
[ "$(stats_sum "$T/nocap.json" bytes pread)" = $((400 * 40960)) ] || fail "no cap: short reads not counted"
out=$(limited "" "$T/nocapw.json" "$PRE/aio_rw" write "$T/w8" 8 8 128K) || fail "no cap: aio_rw write failed"
check_between "no cap: 8 MiB aio_write (s)" "$(field "$out" secs)" 0 1
exit 0
