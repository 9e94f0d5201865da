#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Supervised mode (issue 9): `bonsaictl run` supervises a statically linked program by
# itself (no "NO LIMITS" warning) and holds it to write and read caps on files and a
# pipe; a pipe read is charged what it moved (a writer's 4 KiB pieces read 64 KiB at
# a time); `stat` lists the process as supervised; a program marked as Go is
# supervised too.
# timeout: 40
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog sv_static write_bytes
need_cmd dd python3 objcopy
P=$PRE/sv_static

# (a) a write cap, found without asking: stat sees it while it runs
"$CTL" run -s w -l 'writes=8MiB/s' -- "$P" write "$T/out" 16M > "$T/w.out" 2> "$T/w.err" &
pid=$!
wait_attached w 1
running=$("$CTL" stat w --json)
wait $pid || fail "supervised write failed: $(cat "$T/w.err")"
grep -q 'NO LIMITS' "$T/w.err" && fail "run warned although it supervises: $(cat "$T/w.err")"
python3 - "$running" <<'PY' || fail "stat while running: $running"
import json, sys
d = json.loads(sys.argv[1])
p = d["processes"][0]
assert p["supervised"] is True and p["comm"] == "sv_static", p
assert p["calls"]["write"]["calls"] > 0, p
PY
check_rate "static write, cap 8 MiB/s" $((16 * MiB)) "$(field "$(cat "$T/w.out")" secs)" $((8 * MiB))
[ "$(stat -c %s "$T/out")" = $((16 * MiB)) ] || fail "data lost: $(stat -c %s "$T/out") bytes written"
# 16 MiB and the report line written to stdout (a file here: a write like any other)
want=$((16 * MiB + $(stat -c %s "$T/w.out")))
[ "$(total_bytes w write)" = "$want" ] || fail "stat counts $(total_bytes w write) bytes written, not $want"
[ "$(jq_stat w 'd["total"]["calls"]["write"]["throttled"] > 0')" = True ] || fail "no write was held back"

# (b) read caps on a file: read() and pread()
head -c $((12 * MiB)) /dev/zero > "$T/in"
out=$("$CTL" run -s r -l 'reads=8MiB/s' -- "$P" read "$T/in") || fail "supervised read failed"
check_rate "static read, cap 8 MiB/s" $((12 * MiB)) "$(field "$out" secs)" $((8 * MiB))
out=$("$CTL" run -s pr -l 'pread=8MiB/s' -- "$P" pread "$T/in") || fail "supervised pread failed"
check_rate "static pread, cap 8 MiB/s" $((12 * MiB)) "$(field "$out" secs)" $((8 * MiB))

# (c) a pipe: 4 KiB writes read 64 KiB at a time; each read is charged what it moved
out=$(dd if=/dev/zero bs=4k count=1536 status=none | "$CTL" run -s p -l 'read=2MiB/s' -- "$P" read -) ||
  fail "supervised pipe read failed"
check_rate "static pipe read, cap 2 MiB/s" $((6 * MiB)) "$(field "$out" secs)" $((2 * MiB))
[ "$(total_bytes p read)" = $((6 * MiB)) ] || fail "pipe reads charged $(total_bytes p read) bytes, not the 6 MiB moved"

# (d) a program marked as Go (section .note.go.buildid) is supervised, dynamic or not
cp "$PRE/write_bytes" "$T/gobin"
printf 'Go\0\0' > "$T/note"
objcopy --add-section .note.go.buildid="$T/note" "$T/gobin" 2>/dev/null || skip "objcopy cannot add a section"
"$CTL" run -s g -l 'writes=8MiB/s' -- "$T/gobin" "$T/out2" 4M > "$T/g.out" 2> "$T/g.err" || fail "Go-marked run failed: $(cat "$T/g.err")"
grep -q 'NO LIMITS' "$T/g.err" && fail "run warned about a Go program it should supervise: $(cat "$T/g.err")"
want=$((4 * MiB + $(stat -c %s "$T/g.out")))
[ "$(total_bytes g write)" = "$want" ] || fail "Go-marked program: $(total_bytes g write) bytes counted, not $want"
check_rate "Go-marked write, cap 8 MiB/s" $((4 * MiB)) "$(field "$(cat "$T/g.out")" secs)" $((8 * MiB)) 0.75 1.3
exit 0
