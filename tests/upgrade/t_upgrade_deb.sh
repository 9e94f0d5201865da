#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The package upgraded under a running service (docs/upgrades.md, "Upgrading a host"):
# the previous release's .deb (built from this clone's history by
# tests/golden/build_prev_deb.sh, `make prev-deb`) is installed with dpkg -i; its
# bonsaictl runs a service whose shell execs one 2 MiB dd after another under
# writes=2MiB/s; then `dpkg -i` of this build's .deb (`make deb`, as t_pkg_deb makes it)
# while it runs. The maintainer scripts stop nothing (the shell lives on, uninterrupted);
# the dd it starts after the upgrade load the new library and stay capped (>= 0.9 s each);
# the new /usr/bin/bonsaictl's `stat` and `set` work on the running service (after
# set writes=4MiB/s ~0.5 s each); every dd's bytes are counted; the service prints at
# most a line or two. Needs root (dpkg -i into this machine, as t_pkg_deb); never leaves
# the package installed.
# timeout: 900
# (make deb ~35 s idle, 90..190 s loaded, when t_pkg_deb's package is not there to reuse; the
# previous release's package, when `make test` has not built it in the background: ~7
# minutes of CPU with a cold compiler cache, 50 minutes of wall time at load 18; dpkg -i
# 10..15 s; the service ~25 s. The whole test took 256 s at load 13..17 with make deb, 38 s
# at load 7 with both packages there)
. "$(dirname "$0")/../integration/lib/ctl_lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (dpkg -i)"
[ -z "${BONSAI_SANITIZER:-}" ] || skip "the package is built in release mode only"
need_cmd dpkg dpkg-deb dpkg-buildpackage dh scdoc git
top=$(cd "$(dirname "$0")/../.." && pwd)
if dpkg-query -W -f='${Status}' bonsai 2>/dev/null | grep -q installed || [ -e /usr/bin/bonsaictl ]; then
  skip "bonsai is already installed on this machine: not touching it"
fi
VERSION=$(cat "$top/VERSION")
ARCH=$(dpkg-architecture -qDEB_HOST_ARCH)
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -C "$top" B="$BONSAI_BUILD" "$@"; }

# ---- the previous release's package (cached under the build root) ----
PREV_DEB=${BONSAI_PREV_DEB:-$BONSAI_BUILD/prev-deb/bonsai.deb}
if [ ! -f "$PREV_DEB" ]; then
  t0=$SECONDS
  rc=0
  nice -n 19 bash "$top/tests/golden/build_prev_deb.sh" "$(dirname "$PREV_DEB")" > "$T/prev.log" 2>&1 || rc=$?
  case $rc in
    0) note "built the previous release's package in $((SECONDS - t0)) s" ;;
    3) skip "no git history here: the previous release cannot be built ($(cat "$T/prev.log"))" ;;
    4) if [ "$(git -C "$top" rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
         skip "a shallow clone: $(cat "$T/prev.log")"
       fi
       fail "$(cat "$T/prev.log")" ;;
    *) fail "building the previous release's package failed: $(tail -n 20 "$T/prev.log")" ;;
  esac
fi
PREV_VERSION=$(dpkg-deb -f "$PREV_DEB" Version)
[ "$PREV_VERSION" = 0.2.0 ] || fail "$PREV_DEB is version $PREV_VERSION, not 0.2.0"

# ---- this build's package: t_pkg_deb's when it is newer than the build, else made ----
DEB=$(ls -t "$BONSAI_BUILD"/bonsai_"$VERSION"*_"$ARCH".deb 2>/dev/null | head -n 1)
if [ -z "$DEB" ] || [ "$DEB" -ot "$BONSAI_BUILD/libbonsai.so" ] || [ "$DEB" -ot "$BONSAI_BUILD/bonsaictl" ]; then
  s=$(now_ns)
  mk deb > "$T/deb.log" 2>&1 || { tail -n 30 "$T/deb.log" >&2; fail "make deb failed"; }
  DEB_VERSION=$(sed -n 's/^make deb: version //p' "$T/deb.log")
  DEB=$BONSAI_BUILD/bonsai_${DEB_VERSION}_${ARCH}.deb
  note "make deb: $(secs_since "$s") s"
fi
[ -f "$DEB" ] || fail "no package of this build ($DEB)"
DEB_VERSION=$(dpkg-deb -f "$DEB" Version)
dpkg --compare-versions "$DEB_VERSION" gt "$PREV_VERSION" || fail "$DEB_VERSION does not sort after $PREV_VERSION"

# What an upgrade runs: the old package's prerm and postrm, the new one's preinst and
# postinst. None may stop, restart or signal anything.
for d in "$PREV_DEB" "$DEB"; do
  rm -rf "$T/ctl" && dpkg-deb -e "$d" "$T/ctl"
  for f in "$T"/ctl/preinst "$T"/ctl/postinst "$T"/ctl/prerm "$T"/ctl/postrm; do
    [ -f "$f" ] || continue
    # (what a script only says, an echo or a comment, is not looked at)
    if grep -nvE '^[[:space:]]*(#|echo )' "$f" |
         grep -E 'systemctl|deb-systemd-invoke|invoke-rc\.d|service |kill|start-stop-daemon|bonsaictl' > "$T/stops"; then
      fail "$(basename "$d")'s $(basename "$f") may stop or signal something: $(cat "$T/stops")"
    fi
  done
done

cleanup_hooks+=('dpkg -s bonsai >/dev/null 2>&1 && dpkg -P bonsai >/dev/null 2>&1')
dpkg -i "$PREV_DEB" > "$T/dpkg-prev.log" 2>&1 || { cat "$T/dpkg-prev.log" >&2; fail "dpkg -i $PREV_DEB failed"; }
[ "$(dpkg-query -W -f='${Version}' bonsai)" = 0.2.0 ] || fail "installed $(dpkg-query -W -f='${Version}' bonsai)"
LIBDIR=/usr/lib/$MULTIARCH/bonsai

# ---- the service, started by 0.2.0's bonsaictl ----
: > "$T/times"
chmod 755 "$T"
/usr/bin/bonsaictl run -s upd --scope service -l writes=2MiB/s -- env T="$T" bash -c '
  for i in $(seq 1 40); do
    [ -e "$T/stop" ] && break
    s=${EPOCHREALTIME/./}
    dd if=/dev/zero of=/dev/null bs=64k count=32 status=none
    e=${EPOCHREALTIME/./}
    echo $((e - s)) >> "$T/times"
  done' > "$T/service.out" 2> "$T/service.err" &
svc=$!
cleanup_hooks+=('touch "$T/stop"; kill $svc 2>/dev/null; wait $svc 2>/dev/null')

wait_lines() {  # N: until the service has timed N dd (bounded)
  local i
  for i in $(seq 1 400); do
    [ "$(wc -l < "$T/times")" -ge "$1" ] && return 0
    kill -0 $svc 2>/dev/null || fail "the service ended: $(cat "$T/service.err")"
    sleep 0.05
  done
  fail "the service timed only $(wc -l < "$T/times") dd of $1 in 20 s"
}
line() { sed -n "$1p" "$T/times"; }

wait_lines 2
before=$(line 2)
[ "$before" -ge 900000 ] || fail "under 0.2.0's package a dd took $before us (not capped?)"

# ---- the upgrade, while it runs ----
s=$(now_ns)
dpkg -i "$DEB" > "$T/dpkg.log" 2>&1 || { cat "$T/dpkg.log" >&2; fail "dpkg -i $DEB over 0.2.0 failed"; }
dpkg_s=$(secs_since "$s")
[ "$(dpkg-query -W -f='${Version}' bonsai)" = "$DEB_VERSION" ] || fail "installed $(dpkg-query -W -f='${Version}' bonsai)"
kill -0 $svc 2>/dev/null || fail "the service did not survive dpkg -i: $(cat "$T/service.err")"
grep -q 'running services keep their limits' "$T/dpkg.log" || fail "postinst said nothing of the upgrade: $(cat "$T/dpkg.log")"
/usr/bin/bonsaictl --version | head -n 1 | grep -qx "bonsaictl $VERSION" || fail "--version: $(/usr/bin/bonsaictl --version)"
n=$(wc -l < "$T/times")
versions=
for _ in $(seq 1 40); do
  versions="$versions $(/usr/bin/bonsaictl stat upd --json | grep -o '"library_version": *"[^"]*"' | tr -d ' ')"
  case $versions in *"\"$VERSION\""*) break ;; esac
  sleep 0.1
done
case $versions in *"\"$VERSION\""*) ;; *) fail "no process of the service ran the new library: $versions" ;; esac
wait_lines $((n + 3))
for i in $((n + 2)) $((n + 3)); do
  t=$(line $i)
  [ "$t" -ge 900000 ] || fail "after the upgrade dd #$i took $t us (uncapped)"
done
quickest=$(line $((n + 2)))
[ "$(line $((n + 3)))" -lt "$quickest" ] && quickest=$(line $((n + 3)))
note "dpkg -i over 0.2.0: $dpkg_s s; 2 MiB dd: $before us under 0.2.0, $(line $((n + 2))) and $(line $((n + 3))) us after"

# The new bonsaictl controls the running service.
/usr/bin/bonsaictl stat upd > "$T/stat.out" 2>&1 || fail "stat: $(cat "$T/stat.out")"
grep -q 'segment layout 14' "$T/stat.out" || fail "stat: $(cat "$T/stat.out")"
/usr/bin/bonsaictl set upd 'writes=4MiB/s' > "$T/set.out" 2>&1 || fail "set: $(cat "$T/set.out")"
m=$(wc -l < "$T/times")
wait_lines $((m + 4))
# ~0.5 s each; as t_upgrade_live: >= 0.4 s each, the quickest of three at most 0.7 s or
# 0.8x the quickest at 2 MiB/s (a loaded machine adds its start-up time to each).
fastest=
for i in $((m + 2)) $((m + 3)) $((m + 4)); do
  t=$(line $i)
  [ "$t" -ge 400000 ] || fail "after set writes=4MiB/s dd #$i took $t us (uncapped?)"
  [ -z "$fastest" ] || [ "$t" -lt "$fastest" ] && fastest=$t
done
[ "$fastest" -le 700000 ] || [ "$fastest" -le $((quickest * 8 / 10)) ] ||
  fail "after set writes=4MiB/s the quickest dd took $fastest us (at 2 MiB/s $quickest): $(tr '\n' ' ' < "$T/times")"
note "after set writes=4MiB/s: $(line $((m + 2))) $(line $((m + 3))) $(line $((m + 4))) us"

touch "$T/stop"
wait $svc || fail "the service failed: $(cat "$T/service.err")"
dds=$(wc -l < "$T/times")
total=$(/usr/bin/bonsaictl stat upd --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"]["calls"]["write"]["bytes"])') ||
  fail "stat --json after the service"
[ "$total" -ge $((dds * 2 * MiB)) ] && [ "$total" -lt $((dds * 2 * MiB + 64 * 1024)) ] ||
  fail "write bytes $total for $dds dd of 2 MiB"
lines=$(wc -l < "$T/service.err")
[ "$lines" -le 2 ] || fail "the service printed $lines lines: $(head -5 "$T/service.err")"
note "$dds dd, $total bytes counted across both packages, $lines lines on the service's stderr"
/usr/bin/bonsaictl rm upd > /dev/null || fail "rm upd"
dpkg -P bonsai > "$T/dpkg.log" 2>&1 || { cat "$T/dpkg.log" >&2; fail "dpkg -P failed"; }
[ ! -e "$LIBDIR" ] || fail "dpkg -P left $LIBDIR"
exit 0
