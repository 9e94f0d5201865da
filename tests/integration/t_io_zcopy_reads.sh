#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Zero-copy copies are reads of their source (issue 18 item 1): `cp` (copy_file_range),
# sendfile from a file to a socket (its reader runs without the library) and splice of
# a file into a pipe hold a reads cap, named and through syscall(); a writes cap still
# holds; with no cap the copy is as fast as ever. Counted under the call's own name.
# timeout: 70
. "$(dirname "$0")/lib/lib.sh"
need_prog zc_copy
need_cmd cp python3
cap=$((8 * MiB))

# cp: coreutils copies with copy_file_range.
make_data "$T/src24" 24
s=$(now_ns)
limited "reads=8MiB/s" "$T/cp.json" cp "$T/src24" "$T/dst24" || fail "cp failed"
secs=$(secs_since "$s")
same_data "$T/src24" "$T/dst24"
check_between "cp 24 MiB under reads=8MiB/s (s)" "$secs" 2.2 60
check_rate "cp: reads=8MiB/s" $((24 * MiB)) "$secs" "$cap"
[ "$(stats_sum "$T/cp.json" bytes copy_file_range)" = $((24 * MiB)) ] ||
  note "cp moved no bytes with copy_file_range (older coreutils?): read/write took over"
rm -f "$T/dst24"
s=$(now_ns)
limited "read=8MiB/s:fd=file" "$T/cpf.json" cp "$T/src24" "$T/dst24" || fail "cp failed"
secs=$(secs_since "$s")
same_data "$T/src24" "$T/dst24"
check_rate "cp: read=8MiB/s:fd=file" $((24 * MiB)) "$secs" "$cap"

# A writes cap still holds on the destination.
make_data "$T/src16" 16
s=$(now_ns)
limited "writes=8MiB/s" "$T/cpw.json" cp "$T/src16" "$T/dst16" || fail "cp failed"
secs=$(secs_since "$s")
same_data "$T/src16" "$T/dst16"
check_rate "cp: writes=8MiB/s" $((16 * MiB)) "$secs" "$cap"

# No cap: cp of 24 MiB is fast.
rm -f "$T/dst24"
s=$(now_ns)
limited "" "$T/cpn.json" cp "$T/src24" "$T/dst24" || fail "cp failed"
secs=$(secs_since "$s")
same_data "$T/src24" "$T/dst24"
check_between "cp 24 MiB, no cap (s)" "$secs" 0 1

# sendfile (with an offset pointer: charged like pread) to a reader without the library.
for how in sendfile sendfile_sys; do
  port=$(free_port)
  python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); s.settimeout(60)
c, _ = s.accept(); c.settimeout(60); n = 0
while True:
    b = c.recv(1 << 20)
    if not b: break
    n += len(b)
open(sys.argv[2], "w").write(str(n))
' "$port" "$T/$how.got" &
  rpid=$!
  out=$(limited "reads=8MiB/s" "$T/$how.json" "$PRE/zc_copy" "$how" "$T/src16" "$port") || fail "$how: zc_copy failed"
  wait "$rpid" || fail "$how: reader failed"
  note "$how: $out"
  [ "$(cat "$T/$how.got")" = $((16 * MiB)) ] || fail "$how: reader got $(cat "$T/$how.got") bytes"
  check_rate "$how: reads=8MiB/s" $((16 * MiB)) "$(field "$out" secs)" "$cap"
  [ "$(stats_sum "$T/$how.json" bytes sendfile)" = $((16 * MiB)) ] || fail "$how: not counted as sendfile"
  [ "$(stats_sum "$T/$how.json" bytes read pread)" = 0 ] || fail "$how: counted as a read too"
done

# splice of a file into a pipe (file position: charged like read), a file-only cap.
for how in splice splice_sys; do
  out=$(limited "read=8MiB/s:fd=file" "$T/$how.json" "$PRE/zc_copy" "$how" "$T/src16") || fail "$how: zc_copy failed"
  note "$how: $out"
  [ "$(field "$out" bytes)" = $((16 * MiB)) ] || fail "$how: wrong byte count"
  check_rate "$how: read=8MiB/s:fd=file" $((16 * MiB)) "$(field "$out" secs)" "$cap"
done
exit 0
