#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A damaged segment (issue 8, item 3): a rule count past the table, a truncated
# file, an older version's segment (named as such). bonsaictl set --merge / stat / ls never crash on it (a count of 40 used to
# overflow set --merge's stack; stat printed bogus rules): they exit 1, say what is
# wrong and how to recover, and rm --force + run recover. A segment truncated, then
# re-created, then removed while `stat --watch` runs: bonsaictl survives (it used to
# die of SIGBUS), reports the damage once, follows the new segment, drops the removed one.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd python3

# put64 FILE OFFSET VALUE: writes a little-endian 64-bit word.
put64() { python3 -c 'import struct,sys; f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2])); f.write(struct.pack("<Q", int(sys.argv[3])))' "$@"; }
COUNT_OFF=128  # ShmSegment.limits (64) + ShmLimits.set (64): LimitSet.count

# damaged_ok RC ERRFILE WHAT: the command exited 1 (not a signal) and said how to recover.
damaged_ok() {
  [ "$1" = 1 ] || fail "$3: exit $1 (want 1): $(cat "$2")"
  grep -q "is damaged" "$2" || fail "$3: does not say the segment is damaged: $(cat "$2")"
  grep -q "bonsaictl rm --force d" "$2" || fail "$3: does not say how to recover: $(cat "$2")"
}

"$CTL" run -s d -l 'write=1MiB/s' -- true || fail "run"
put64 "$(seg_file d)" $COUNT_OFF 40
"$CTL" set --merge d 'read=1MiB/s' > /dev/null 2> "$T/err"; damaged_ok $? "$T/err" "set --merge"
note "$(cat "$T/err")"
"$CTL" stat d > "$T/out" 2> "$T/err"; damaged_ok $? "$T/err" "stat"
grep -q "limits #" "$T/out" && fail "stat printed limits of a damaged segment: $(cat "$T/out")"
"$CTL" ls > "$T/out" 2> "$T/err"; rc=$?
[ $rc = 1 ] || fail "ls exited $rc on a damaged segment"
grep -q "is damaged" "$T/out" || fail "ls does not show the damage: $(cat "$T/out")"
"$CTL" rm --force d || fail "rm --force of a damaged segment"
"$CTL" run -s d -l 'write=1MiB/s' -- true || fail "run after rm --force"
[ "$(jq_stat d 'd["limits"]')" = "['write=1MiB/s']" ] || fail "recreated segment: $(jq_stat d 'd["limits"]')"

truncate -s 4096 "$(seg_file d)"
"$CTL" stat d 2> "$T/err"; damaged_ok $? "$T/err" "stat of a truncated segment"
grep -q "truncated" "$T/err" || fail "stat does not say truncated: $(cat "$T/err")"
"$CTL" rm --force d || fail "rm --force of a truncated segment"

# A segment an older bonsai made (another layout version, another size): said so.
"$CTL" run -s d -l 'write=1MiB/s' -- true || fail "run"
python3 -c 'import struct,sys; f=open(sys.argv[1],"r+b"); f.seek(8); f.write(struct.pack("<I", 11))' "$(seg_file d)"
truncate -s 4096 "$(seg_file d)"
"$CTL" stat d 2> "$T/err"; damaged_ok $? "$T/err" "stat of an older version's segment"
grep -q "made by another version of bonsai (segment layout 11" "$T/err" || fail "stat does not name the version: $(cat "$T/err")"
"$CTL" rm --force d || fail "rm --force of an older version's segment"

# stat --watch through truncation, replacement and removal.
"$CTL" run -s d -l 'write=1MiB/s' -- true || fail "run"
"$CTL" run -s other -l 'read=1MiB/s' -- true || fail "run other"
"$CTL" stat d other --json --watch 0.1 --count 60 > "$T/watch" 2> "$T/watcherr" &
w=$!
cleanup_hooks+=("kill $w 2>/dev/null")
sleep 1
truncate -s 4096 "$(seg_file d)"
sleep 1
kill -0 $w 2>/dev/null || fail "stat --watch died when the segment was truncated: $(cat "$T/watcherr")"
"$CTL" rm --force d > /dev/null || fail "rm --force"
"$CTL" run -s d -l 'write=3MiB/s' -- true || fail "run (replacement)"
sleep 1
"$CTL" rm d > /dev/null || fail "rm"
sleep 1
kill -0 $w 2>/dev/null || fail "stat --watch ended early: $(cat "$T/watcherr")"
wait $w; rc=$?
[ $rc = 1 ] || fail "stat --watch exited $rc (want 1: it reported a damaged segment)"
note "$(cat "$T/watcherr")"
[ "$(grep -c "truncated" "$T/watcherr")" = 1 ] || fail "the truncation was not reported exactly once: $(cat "$T/watcherr")"
grep -q "service 'd' was removed" "$T/watcherr" || fail "the removal was not reported: $(cat "$T/watcherr")"
python3 - "$T/watch" <<'PY' || fail "stat --watch output: $(tail -n 5 "$T/watch")"
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1])]
d = [x["limits"] for x in docs if x["service"] == "d"]
others = sum(1 for x in docs if x["service"] == "other")
assert d and d[0] == ["write=1MiB/s"], d[:1]
assert ["write=3MiB/s"] in d, "the replacement was never followed"
last = max(i for i, x in enumerate(docs) if x["service"] == "d")
assert sum(1 for x in docs[last + 1:] if x["service"] == "other") >= 5, "d kept showing after its removal"
assert others >= 50, others
PY
exit 0
