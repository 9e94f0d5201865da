#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Strict mode (issue 39), the calls themselves: the library's marked calls keep glibc's
# semantics (vfork, a data call in a signal handler, EINTR and SA_RESTART, cancellation
# of a blocked read, errno); io_uring is denied; `strict: true` in a file does what
# --strict does and bad values are refused (FILE:LINE:COL, exit 2); a `run` nested in a
# strict tree starts no supervisor of its own and its static program stays under the
# outer cap; the library and the supervisor share process slots without losing or
# doubling one; dd, python and curl are held as under plain preload.
# timeout: 50
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog strict_probe sv_static uring_syscall
P=$PRE/strict_probe
CAP=$((8 * MiB))
N=$((12 * MiB))

# (a) semantics of the marked calls, every data call limited (caps that never bind)
out=$("$CTL" run --strict -s sem -l 'reads=1GiB/s' -l 'writes=1GiB/s' -l 'opens=100000/s' -l 'close=100000/s' \
  -- "$P" checks 2> "$T/sem.err") || fail "strict semantics: $(cat "$T/sem.err") $out"
[ "$(grep -c '^ok ' <<<"$out")" = 5 ] || fail "strict semantics: $out"

# (b) io_uring is denied (ENOSYS) under --strict
out=$("$CTL" run --strict -s ring -l "writes=${CAP}B/s" -- "$PRE/uring_syscall") || true
[ "$(field "$out" ring)" = ENOSYS ] || fail "io_uring under --strict: $out"

# (c) the file's `strict: true`, and its bad values
cat > "$T/s.yaml" <<EOF
version: 1
services:
  fromfile:
    strict: true
    limits:
      - calls: [write]
        rate: 8MiB/s
EOF
out=$("$CTL" run -c "$T/s.yaml" -s fromfile -- "$P" raw "$T/ff" $N) || fail "strict: true failed"
check_rate "raw syscalls under strict: true, cap 8 MiB/s" $N "$(field "$out" secs)" $CAP
printf 'version: 1\nservices:\n  bad:\n    strict: maybe\n' > "$T/bad.yaml"
"$CTL" check "$T/bad.yaml" > "$T/bad.out" 2>&1
rc=$?
"$CTL" run --strict --no-supervise -s u -- true 2> "$T/u.err"
rc2=$?
[ $rc = 2 ] && grep -q "bad.yaml:4:13: bad strict 'maybe'" "$T/bad.out" || fail "strict: maybe -> $rc $(cat "$T/bad.out")"
[ $rc2 = 2 ] || fail "--strict --no-supervise was accepted: $(cat "$T/u.err")"

# (d) nested: a run inside a strict tree adds no filter (it would take the outer
# supervisor's notifications); the outer cap holds its static program
"$CTL" run --strict -s outer -l "writes=${CAP}B/s" -- "$CTL" run -s inner -l 'writes=1GiB/s' -- \
  "$PRE/sv_static" write "$T/nested" $N > "$T/n.out" 2> "$T/n.err" || fail "nested run failed: $(cat "$T/n.err")"
grep -q 'already inside a strict tree' "$T/n.err" || fail "the nested run did not say it runs under the outer tree: $(cat "$T/n.err")"
check_rate "static program of a run nested in a strict tree, outer cap 8 MiB/s" $N "$(field "$(cat "$T/n.out")" secs)" $CAP

# (d2) slots: the library and the supervisor share a process's slot (the loader's reads
# reach the supervisor before the library's constructor runs); 40 short-lived children
# later, every process is counted once among the exited and no slot is left behind
head -c 4096 /dev/zero > "$T/small"
"$CTL" run --strict -s slots -l 'reads=1GiB/s' -- sh -c "for i in \$(seq 40); do cat '$T/small' > /dev/null; done" ||
  fail "40 cats under --strict failed"
sleep 1  # the supervisor drops gone processes every 0.5 s
[ "$(jq_stat slots 'len(d["processes"])')" = 0 ] || fail "slots left behind: $("$CTL" stat slots --json)"
n=$(jq_stat slots 'd["exited"]["processes"]')  # sh, 40 cats, seq's subshell: once each
[ "$n" -ge 41 ] && [ "$n" -le 43 ] || fail "exited processes $n: $("$CTL" stat slots --json)"
[ "$(total_bytes slots read)" -ge $((40 * 4096)) ] || fail "reads counted: $(total_bytes slots read)"

# (e) ordinary programs under --strict as under preload: dd (read/write), python (os.write),
# curl (reads a file:// URL, writes with fwrite: glibc's internal writes under --strict)
need_cmd python3 curl
head -c $N /dev/zero > "$T/in"
wall_rate() {  # WHAT CMD...: N bytes over CMD's wall time, checked against the cap
  local s e
  s=$(now_ns)
  "${@:2}" || fail "$1 failed"
  e=$(now_ns)
  check_rate "$1, cap 8 MiB/s" $N "$(awk -v a="$s" -v b="$e" 'BEGIN { print (b - a) / 1e9 }')" $CAP
}
for mode in plain strict; do
  flag=; [ $mode = strict ] && flag=--strict
  wall_rate "dd, $mode" "$CTL" run $flag -s dd$mode -l "writes=${CAP}B/s" -- dd if=/dev/zero of="$T/dd" bs=64k count=192 status=none
  out=$("$CTL" run $flag -s py$mode -l "writes=${CAP}B/s" -- python3 -c "
import os, time
fd = os.open('$T/py', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
t = time.monotonic()
for _ in range(192): os.write(fd, bytes(65536))
print('secs=%.4f' % (time.monotonic() - t))") || fail "python, $mode failed"
  check_rate "python os.write, $mode, cap 8 MiB/s" $N "$(field "$out" secs)" $CAP
  wall_rate "curl file:// (fwrite), $mode" "$CTL" run $flag -s curl$mode -l "writes=${CAP}B/s" -- curl -s -o "$T/curl.out" "file://$T/in"
  cmp -s "$T/in" "$T/curl.out" || fail "curl, $mode: the copy differs"
done
exit 0
