#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# protect: (issue 52) in supervised programs (static C, Go): the supervisor makes a
# protected read at an offset itself on a copy of the descriptor and times it. (1)
# pread, preadv, preadv2 of a static program: the data byte-exact (FNV sum), every call
# timed; O_DIRECT too (4 threads at once), and an unaligned O_DIRECT read fails as it
# would unsupervised, untimed; read and readv (the file position) exact and untimed.
# (2) Under a 10 kHz interval timer (calls interrupted and restarted while made):
# exact. (3) A call the protect: does not name goes as before, untimed. (4) Under a cap
# too: held to it, its bytes counted once. (5) The agent measures a p99 from these
# calls (stat, --json). (6) Static children of a dynamic program (the trampoline, a
# join). (7) A Go program's ReadAt timed, its Read not; both exact.
# timeout: 45
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog sv_static
need_cmd python3 sha256sum
P=$PRE/sv_static
cat > "$T/p.yaml" <<'YAML'
version: 1
services:
  db:
    protect: {calls: [read, pread, readv, preadv], p99: 1s, squeeze: [batch]}
  db2:
    protect: {calls: [pread], p99: 1s, squeeze: [batch2]}
    scope: service
    limits:
      - {calls: [reads], rate: 16MiB/s}
  batch:
    limits:
      - {calls: [reads], rate: 40MiB/s}
  batch2:
    limits:
      - {calls: [reads], rate: 40MiB/s}
YAML
"$CTL" load "$T/p.yaml" > "$T/load.out" || fail "load: $(cat "$T/load.out")"
apid=$(protect_agent_of db)
[ "$apid" != 0 ] || fail "no protect-agent serves db 5 s after load"
cleanup_hooks+=("kill $apid 2>/dev/null")
timed() { jq_stat "$1" 'd["protect"]["timed"]'; }

# (1) Each call of the family: exact; each call at an offset timed (the last, empty one too).
head -c $((5 * MiB + 12345)) /dev/urandom > "$T/data"
want=$(field "$("$P" sum read "$T/data" 100000)" sum)
for call in pread preadv preadv2 read readv; do
  t0=$(timed db)
  out=$("$CTL" run -s db -- "$P" sum "$call" "$T/data" 100000 2> "$T/run.err") || fail "$call: $(cat "$T/run.err")"
  [ "$(field "$out" sum)" = "$want" ] || fail "$call: data differs under the supervisor: $out (want sum=$want)"
  n=$(($(timed db) - t0))
  case $call in
    read | readv) [ "$n" = 0 ] || fail "$call (the file position) timed $n calls: its answer could be lost to a signal" ;;
    *) [ "$n" = "$(field "$out" calls)" ] || fail "$call: $n calls timed of $(field "$out" calls)" ;;
  esac
done
grep -q 'note: protect: read and readv of a supervised program .* are not timed' "$T/run.err" ||
  fail "run did not say read and readv go untimed: $(cat "$T/run.err")"
note "pread, preadv, preadv2: exact, every call timed; read, readv: exact, untimed (said)"
if "$P" sum pread "$T/data" 1M direct > /dev/null 2>&1; then
  for call in pread preadv; do
    t0=$(timed db)
    out=$("$CTL" run -s db -- "$P" sum "$call" "$T/data" 1M direct 2> "$T/run.err") || fail "$call O_DIRECT: $(cat "$T/run.err")"
    [ "$(field "$out" sum)" = "$want" ] || fail "$call O_DIRECT: data differs: $out"
    [ $(($(timed db) - t0)) = "$(field "$out" calls)" ] || fail "$call O_DIRECT: not every call timed"
  done
  # An unaligned O_DIRECT size: EINVAL, as without a supervisor, and not timed.
  t0=$(timed db)
  "$CTL" run -s db -- "$P" sum pread "$T/data" 1000 direct > /dev/null 2> "$T/run.err" && fail "unaligned O_DIRECT read succeeded"
  grep -q 'errno 22' "$T/run.err" || fail "unaligned O_DIRECT read: $(cat "$T/run.err")"
  [ "$(timed db)" = "$t0" ] || fail "an unaligned O_DIRECT read was timed"
  # Four threads' O_DIRECT preads at once (the workers'): exact, each timed.
  t0=$(timed db)
  out=$("$CTL" run -s db -- "$P" tsum 4 "$T/data" 64K direct 2> "$T/run.err") || fail "tsum: $(cat "$T/run.err")"
  [ "$(field "$out" sum)" = "$want" ] || fail "4 threads' O_DIRECT preads: data differs: $out"
  # (glibc's malloc reads /sys/devices/system/cpu/online once a second thread runs: timed too)
  n=$(($(timed db) - t0))
  check_between "4 threads' O_DIRECT preads timed" "$n" "$(field "$out" calls)" $(($(field "$out" calls) + 2))
  note "O_DIRECT pread, preadv, 4 threads' preads: exact, timed; unaligned: EINVAL, untimed"
else
  note "no O_DIRECT in $T: its cases skipped"
fi

# (2) A SIGALRM every 100 us (SA_RESTART): calls interrupted while the supervisor makes
# them restart as new ones; the data stays exact (a worker wrote a cancelled call's data
# into the buffer of the next before sv_timed_deliver's lock).
for d in "" direct; do
  [ -n "$d" ] && ! "$P" sum pread "$T/data" 1M direct > /dev/null 2>&1 && continue
  out=$("$CTL" run -s db -- "$P" sumsig pread "$T/data" 64K $d 2> "$T/run.err") || fail "sumsig: $(cat "$T/run.err")"
  [ "$(field "$out" sum)" = "$want" ] || fail "preads under a 10 kHz timer ${d:+($d)}: data differs: $out"
  note "preads under a 10 kHz timer ${d:+($d)}: exact ($(field "$out" sigs) signals)"
done

# (3) db2 protects pread only: its preadv go as before (untimed); (4) its preads are timed
# under its 16MiB/s cap, held to it, their bytes counted once.
head -c $((12 * MiB)) /dev/urandom > "$T/d12"
want12=$(field "$("$P" sum read "$T/d12" 1M)" sum)
out=$("$CTL" run -s db2 -- "$P" sum preadv "$T/d12" 1M) || fail "db2 preadv failed"
[ "$(field "$out" sum)" = "$want12" ] || fail "db2 preadv differs: $out"
[ "$(timed db2)" = 0 ] || fail "a preadv protect: does not name was timed ($(timed db2))"
out=$("$CTL" run -s db2 -- "$P" sum pread "$T/d12" 1M) || fail "db2 pread failed"
[ "$(field "$out" sum)" = "$want12" ] || fail "db2 pread differs: $out"
[ "$(timed db2)" = "$(field "$out" calls)" ] || fail "db2: $(timed db2) preads timed of $(field "$out" calls)"
[ "$(total_bytes db2 pread)" = $((12 * MiB)) ] || fail "db2: $(total_bytes db2 pread) pread bytes counted, not 12 MiB"
# The cap's depth lets the first chunk go at once: 12 MiB at 16 MiB/s takes ~0.75 s.
check_rate "db2 protected preads, cap 16 MiB/s" $((12 * MiB)) "$(field "$out" secs)" $((16 * MiB)) 0.75 1.3

# (5) The agent's p99 from supervised calls: 4 KiB preads for up to 6 s until a period's shows.
(
  end=$(($(date +%s) + 6))
  while [ "$(date +%s)" -lt "$end" ] && [ ! -e "$T/stop" ]; do
    "$CTL" run -s db -- "$P" sum pread "$T/data" 4K > /dev/null || exit 1
  done
) &
loop=$!
cleanup_hooks+=("kill $loop 2>/dev/null")
p99=0
for _ in $(seq 1 50); do
  sleep 0.1
  p99=$(jq_stat db 'd["protect"]["p99_ns"] if d["protect"]["samples"] > 0 else 0')
  [ "$p99" != 0 ] && break
done
line=$("$CTL" stat db | grep 'protect:')
touch "$T/stop"  # the loop ends after its current run (no read of it left for the cases below)
wait "$loop" 2>/dev/null
[ "$p99" != 0 ] || fail "no p99 measured from supervised preads: $(jq_stat db 'd["protect"]')"
note "agent: $line"
check_between "p99 of cached 4 KiB preads (ns)" "$p99" 1 100000000

# (6) Static children of a dynamic service process (the library's): the first through the
# trampoline, the second joining its supervisor; both exact and timed.
t0=$(timed db)
"$CTL" run -s db -- sh -c "'$P' sum pread '$T/data' 100000; '$P' sum preadv '$T/data' 100000" > "$T/kids.out" 2>&1 ||
  fail "static children: $(cat "$T/kids.out")"
[ "$(grep -c "sum=$want" "$T/kids.out")" = 2 ] || fail "static children's data differs: $(cat "$T/kids.out")"
n=$(($(timed db) - t0))
[ "$n" = 108 ] || fail "static children: $n calls timed, not 2 x 54: $(cat "$T/kids.out")"
note "static children (trampoline, then joined): exact, every call timed"

# (7) Go: ReadAt (pread) exact and timed; Read (read, the file position) exact, untimed.
if build_gocat; then
  for mode in -at -; do
    t0=$(timed db)
    got=$("$CTL" run -s db -- "$GOCAT" "$T/data" "$mode" 2> "$T/go.err" | sha256sum | cut -d' ' -f1)
    [ "$got" = "$(sha256sum < "$T/data" | cut -d' ' -f1)" ] || fail "Go $mode: data differs: $(cat "$T/go.err")"
    n=$(($(timed db) - t0))
    if [ "$mode" = -at ]; then
      [ "$n" -ge 81 ] || fail "Go ReadAt: $n calls timed (5 MiB in 64 KiB reads: at least 81)"
    else
      [ "$n" = 0 ] || fail "Go Read: $n calls timed"
    fi
  done
  note "Go ReadAt: exact, timed; Read: exact, untimed"
else
  note "no Go: $(cat "$T/gobuild.log")"
fi
exit 0
