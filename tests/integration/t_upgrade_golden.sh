#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Segments made by the previous release (tests/golden/: layout 14, made by 0.2.0 with
# real processes) are read and controlled by this build in place: `stat` shows their
# counters, limits and the host's capacity, `set` and `load` change them (the header
# still says 14 after: no conversion), the library attaches and is held to the new
# limit, and the fleet service started by 0.2.0 is told about once in `stat`. A segment
# of a layout newer than this build reads is said as such: by `stat`, and by the
# library once for the whole service (not once per process), and so is a host segment of
# shares of a newer layout. docs/upgrades.md.
# timeout: 90
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd zstd python3 dd
GOLD=$(cd "$(dirname "$0")/../golden" && pwd)
uid=$(id -u)
host_file=/dev/shm/${BONSAI_SHM_PREFIX}bonsai-host.$uid
cleanup_hooks+=('rm -f "$host_file"')

# put_u32 FILE OFFSET VALUE: a little-endian 32-bit word written in place.
put_u32() {
  printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $(($3 & 255)) $(($3 >> 8 & 255)) $(($3 >> 16 & 255)) $(($3 >> 24 & 255)))" |
    dd of="$1" bs=1 seek="$2" conv=notrunc status=none || fail "writing $1 at $2"
}
# restore IMAGE FILE UID_OFFSET: the golden image into place as this user's (the header
# names the uid that made it: rewritten to ours), mode 0600.
restore() {
  zstd -qdc "$GOLD/$1.seg.zst" > "$2.tmp" || fail "zstd $1"
  put_u32 "$2.tmp" "$3" "$uid"
  chmod 600 "$2.tmp" && mv "$2.tmp" "$2"
}
layout_of() { od -An -tu4 -j8 -N4 "$1" | tr -d ' '; }
restore web "$(seg_file web)" 36
restore fleet "$(seg_file fleet)" 36
restore host "$host_file" 12
[ "$(layout_of "$(seg_file web)")" = 14 ] || fail "the golden image is not layout 14"

# Read: counters, limits, the host capacity they share.
out=$("$CTL" stat web --json) || fail "stat web: $out"
python3 - "$out" <<'PY' || fail "stat of 0.2.0's segment: $out"
import json, sys
d = json.loads(sys.argv[1])
assert d["layout"] == 14, d["layout"]
assert d["limits"] == ["writes=8MiB/s:ceil=16MiB/s", "reads=32MiB/s"], d["limits"]
assert d["exited"]["processes"] == 3, d["exited"]
w = d["total"]["calls"]["write"]
assert w["bytes"] == 3 << 20 and w["calls"] == 48 and w["throttled"] > 0, w
PY
"$CTL" stat web | grep -q 'under writes=16MiB/s: borrowed ' || fail "host capacity not read: $("$CTL" stat web)"
"$CTL" ls | grep -q '^web ' || fail "ls: $("$CTL" ls)"

# Control: set, then the library attaches to the old segment and is held to it.
"$CTL" set web 'writes=2MiB/s' > /dev/null || fail "set on 0.2.0's segment"
t0=$(now_ns)
env LD_PRELOAD="$PRELOAD" BONSAI_SERVICE=web dd if=/dev/zero of=/dev/null bs=64k count=32 status=none 2> "$T/dd.err" ||
  fail "dd: $(cat "$T/dd.err")"
ms=$((($(now_ns) - t0) / 1000000))
[ -s "$T/dd.err" ] && fail "the library said something: $(cat "$T/dd.err")"
[ "$ms" -ge 800 ] || fail "2 MiB under writes=2MiB/s on 0.2.0's segment took $ms ms (uncapped?)"
note "2 MiB at writes=2MiB/s on a layout-14 segment: $ms ms"
"$CTL" stat web > "$T/web.out"
grep -q '^  exited (4) ' "$T/web.out" && sed -n '/^  total /,$p' "$T/web.out" | grep -q '^ *write  *80  *5.00 MiB' ||
  fail "counters not kept: $(cat "$T/web.out")"
[ "$(layout_of "$(seg_file web)")" = 14 ] || fail "set converted the segment"

# load writes both segments in place: the service's limits and the host's capacity.
cat > "$T/up.yaml" <<YAML
version: 1
host:
  capacity:
    - calls: [writes]
      rate: 32MiB/s
services:
  web:
    scope: service
    limits:
      - calls: [writes]
        rate: 8MiB/s
        ceil: 32MiB/s
YAML
"$CTL" load "$T/up.yaml" > "$T/load.out" 2>&1 || fail "load over 0.2.0's segments: $(cat "$T/load.out")"
"$CTL" stat web | grep -q 'under writes=32MiB/s' || fail "host capacity not rewritten: $("$CTL" stat web)"
[ "$(layout_of "$host_file")" = 14 ] || fail "load converted the host segment"
[ "$(layout_of "$(seg_file web)")" = 14 ] || fail "load converted the service segment"

# The fleet service 0.2.0 started: said once, in stat.
"$CTL" stat fleet > "$T/fleet.out" 2>&1 || fail "stat fleet: $(cat "$T/fleet.out")"
[ "$(grep -c 'fleet configuration written by 0.2.0' "$T/fleet.out")" = 1 ] || fail "stat fleet: $(cat "$T/fleet.out")"

# A newer layout (16, that this build may not read): stat says so, and 20 processes of
# the service print one line between them.
cat > "$T/nu.yaml" <<YAML
version: 1
services:
  nu:
    limits:
      - calls: [writes]
        rate: 1MiB/s
YAML
"$CTL" load "$T/nu.yaml" > /dev/null || fail "load nu"
[ "$(layout_of "$(seg_file nu)")" = 15 ] || fail "a new segment is not layout 15"
put_u32 "$(seg_file nu)" 8 16               # the header's version
put_u32 "$(seg_file nu)" $((11295168 + 8)) 16  # the directory's oldest reader
"$CTL" stat nu > "$T/nu.out" 2>&1 && fail "stat read a newer layout"
grep -q 'made by a newer bonsai (segment layout 16; this bonsaictl reads 14..15)' "$T/nu.out" || fail "stat nu: $(cat "$T/nu.out")"
for _ in $(seq 1 20); do
  env LD_PRELOAD="$PRELOAD" BONSAI_SERVICE=nu true
done 2> "$T/nu.err"
lines=$(wc -l < "$T/nu.err")
[ "$lines" = 1 ] || fail "20 processes of a service on a newer layout printed $lines lines: $(head -5 "$T/nu.err")"
grep -q 'made by a newer bonsai (segment layout 16; this library reads 14..15)' "$T/nu.err" || fail "$(cat "$T/nu.err")"
note "newer layout: $lines line for 20 processes"

# A host segment of shares of a newer layout: the 50 processes of a service that borrows
# from it (web: writes=8MiB/s:ceil=32MiB/s) print one line between them, which names it.
put_u32 "$host_file" 8 16
for _ in $(seq 1 50); do
  env LD_PRELOAD="$PRELOAD" BONSAI_SERVICE=web true
done 2> "$T/host.err"
lines=$(wc -l < "$T/host.err")
[ "$lines" = 1 ] || fail "50 processes on a newer host segment printed $lines lines: $(head -3 "$T/host.err")"
grep -q "service 'web': $host_file was made by a newer bonsai (host segment layout 16; this library reads 14..15)" \
  "$T/host.err" || fail "$(cat "$T/host.err")"
note "newer host segment: $lines line for 50 processes"
exit 0
