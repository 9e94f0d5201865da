#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fail open (issue 3): with BONSAI_SERVICE naming a missing, garbage, truncated,
# newer-layout or world-readable segment, a program runs unlimited and unharmed
# (exit 0, all its data) and the library says so in exactly one stderr line.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd dd python3

# under SERVICE: runs dd (8 MiB) with BONSAI_SERVICE=SERVICE and a 1 MiB/s cap that
# would apply if the service's limits were used; checks exit, size, speed, stderr.
under() {
  local service=$1 want=$2 start secs lines
  start=$(now_ns)
  env LD_PRELOAD="$PRELOAD" BONSAI_SERVICE="$service" dd if=/dev/zero of="$T/out" bs=64k count=128 status=none 2> "$T/err" ||
    fail "$service: dd failed: $(cat "$T/err")"
  secs=$(secs_since "$start")
  [ "$(stat -c %s "$T/out")" = $((8 * MiB)) ] || fail "$service: output is $(stat -c %s "$T/out") bytes"
  lines=$(grep -c 'bonsai' "$T/err")
  [ "$lines" = 1 ] || fail "$service: expected one bonsai line on stderr, got $lines: $(cat "$T/err")"
  grep -q -- "$want" "$T/err" || fail "$service: stderr does not say '$want': $(cat "$T/err")"
  check_between "$service: seconds for 8 MiB (1 MiB/s if limited)" "$secs" 0 4
  note "$(cat "$T/err")"
}

under missing "cannot open"

head -c $((12 * MiB)) /dev/urandom > "$(seg_file garbage)"  # larger than a segment: the magic is what is wrong
chmod 600 "$(seg_file garbage)"
under garbage "magic"

"$CTL" run -s short -l 'write=1MiB/s' -- true || fail "run true"
truncate -s 4096 "$(seg_file short)"
under short "truncated"

# A layout no reader of this build may use (version 99, its section directory's oldest
# reader 99; the directory follows the 11,295,168-byte base): refused as newer.
"$CTL" run -s oldver -l 'write=1MiB/s' -- true || fail "run true"
printf '\x63\x00\x00\x00' | dd of="$(seg_file oldver)" bs=1 seek=8 conv=notrunc status=none  # version := 99
printf '\x63\x00\x00\x00' | dd of="$(seg_file oldver)" bs=1 seek=$((11295168 + 8)) conv=notrunc status=none
under oldver "newer bonsai"
# A newer layout that only added sections (its directory says this build may read it):
# used, capped, nothing said.
"$CTL" run -s addver -l 'write=4MiB/s' -- true || fail "run true"
printf '\x63\x00\x00\x00' | dd of="$(seg_file addver)" bs=1 seek=8 conv=notrunc status=none  # version := 99
start=$(now_ns)
env LD_PRELOAD="$PRELOAD" BONSAI_SERVICE=addver dd if=/dev/zero of="$T/out" bs=64k count=128 status=none 2> "$T/err" ||
  fail "addver: dd failed: $(cat "$T/err")"
check_between "addver: seconds for 8 MiB at 4 MiB/s" "$(secs_since "$start")" 1.5 4
grep -q bonsai "$T/err" && fail "addver: the library spoke of a readable newer layout: $(cat "$T/err")"

"$CTL" run -s open -l 'write=1MiB/s' -- true || fail "run true"
chmod 644 "$(seg_file open)"
under open "not private"
"$CTL" stat open > /dev/null 2> "$T/ctlerr" && fail "bonsaictl stat accepted a 0644 segment"
grep -q "not 0600" "$T/ctlerr" || fail "bonsaictl's refusal is unclear: $(cat "$T/ctlerr")"

# The same segment made sane again limits as it should: the checks above were the cause.
chmod 600 "$(seg_file open)"
start=$(now_ns)
env LD_PRELOAD="$PRELOAD" BONSAI_SERVICE=open dd if=/dev/zero of=/dev/null bs=64k count=32 status=none
check_rate "sane segment" $((2 * MiB)) "$(secs_since "$start")" $MiB
exit 0
