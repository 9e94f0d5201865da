# SPDX-License-Identifier: MIT
# Driver for the file_xfer family tests (t_io_file_*.sh, t_io_sockets.sh): start capped
# copies in the background, then check each one's data (sha256), its stats (every
# expected call counted) and its rate. Sourced after lib.sh; never run.

DATA_CALLS="read pread readv preadv recv recvfrom recvmsg recvmmsg write pwrite writev pwritev
send sendto sendmsg sendmmsg sendfile splice vmsplice tee copy_file_range fread fwrite"
XFER_SECS=2   # each copy is meant to take this long at its cap

# xfer_start PROG MODE SRC FACTOR [OPTS]: copies SRC with `PROG MODE` under one shared
# bucket for every data call ("reads+writes", plus OPTS such as ":fd=socket"). FACTOR =
# bytes charged per byte copied (2 for read+write, 1 for sendfile...): the cap is
# chosen so the copy takes XFER_SECS.
xfer_start() {
  local prog=$1 mode=$2 src=$3 factor=$4 opts=${5:-} size cap_mib
  size=$(stat -c %s "$src")
  cap_mib=$((size * factor / XFER_SECS / MiB))
  echo $((cap_mib * MiB)) > "$T/$prog.$mode.cap"
  limited "reads+writes=${cap_mib}MiB/s$opts" "$T/$prog.$mode.json" "$PRE/$prog" "$mode" "$src" \
    "$T/$prog.$mode.dst" > "$T/$prog.$mode.out" 2> "$T/$prog.$mode.err" &
}

# xfer_check PROG MODE SRC CALL...: the copy is exact, each CALL was counted with
# bytes, nothing was printed on stderr, and the calls of XFER_CHARGED (default: all
# data calls) together held the cap.
xfer_check() {
  local prog=$1 mode=$2 src=$3 c out secs charged
  shift 3
  out=$(cat "$T/$prog.$mode.out")
  [ -s "$T/$prog.$mode.err" ] && fail "$prog $mode: stderr: $(head -c 500 "$T/$prog.$mode.err")"
  [ -n "$out" ] || fail "$prog $mode: no result line"
  same_data "$src" "$T/$prog.$mode.dst"
  for c in "$@"; do
    [ "$(stats_sum "$T/$prog.$mode.json" bytes "$c")" -gt 0 ] || fail "$prog $mode: '$c' not counted"
  done
  charged=$(stats_sum "$T/$prog.$mode.json" bytes ${XFER_CHARGED:-$DATA_CALLS})
  [ "$(stats_sum "$T/$prog.$mode.json" throttled ${XFER_CHARGED:-$DATA_CALLS})" -gt 0 ] || fail "$prog $mode: never throttled"
  secs=$(field "$out" secs)
  check_rate "$prog $mode ($*)" "$charged" "$secs" "$(cat "$T/$prog.$mode.cap")"
}

# xfer_wait: waits for every background copy; fails if one failed.
xfer_wait() {
  local pid rc=0
  for pid in $(jobs -p); do wait "$pid" || rc=1; done
  [ $rc -eq 0 ] || { cat "$T"/*.err >&2; fail "a copy exited non-zero"; }
}
