#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A tenant cannot make `stat` reclaim a live host process (issue 58, item 6). It rewrites
# the pid namespace of a host process's slot (the segment is the tenant's to write): to a
# namespace no process has, then to a live namespace where that pid is not. `stat` keeps
# showing the process (by its pid in the namespace the slot names, not as a host pid:
# no reading proves which process it is) and counts its bytes; nothing is folded. It used
# to take the slot for a dead container's and reclaim it: the process vanished from the
# accounting. With the namespace put back, `stat` names the host pid again; once the
# process is gone its slot is reclaimed, its bytes counted once.
# timeout: 150
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd python3

"$CTL" run -s l -l 'write=1GiB/s' -- python3 -c '
import os, time
fd = os.open("/dev/null", os.O_WRONLY)
for _ in range(16):
    os.write(fd, b"x" * 65536)
time.sleep(600)' &
p=$!
cleanup_hooks+=("kill $p 2>/dev/null")
wait_attached l 1
for _ in $(seq 50); do [ "$(total_bytes l write)" = $((MiB)) ] && break; sleep 0.1; done
[ "$(total_bytes l write)" = $((MiB)) ] || fail "the writer's MiB is not counted: $(total_bytes l write)"
own_ns=$(stat -L -c %i /proc/self/ns/pid)
exited=$(jq_stat l 'd["exited"]["processes"]')  # the service's short-lived processes before (python's shims)

# check_kept WHAT: the slot of $p is listed (by its pid in the named namespace), its bytes
# counted, nothing folded.
check_kept() {
  local doc
  doc=$("$CTL" stat l --json) || fail "$1: stat l"
  python3 - "$doc" "$p" "$exited" <<'PY' || fail "$1: stat lost the live process: $doc"
import json, sys
d, pid, exited = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ps = d["processes"]
assert len(ps) == 1, ps
assert ps[0]["ns_pid"] == pid and ps[0]["pid"] is None, ps[0]  # named by what the slot says, not as a host pid
assert d["exited"]["processes"] == exited, (d["exited"], exited)
assert d["total"]["calls"]["write"]["bytes"] == 1 << 20, d["total"]["calls"]["write"]
PY
}

python3 "$TLIB/tenant_slots.py" "$(seg_file l)" setns "$p" 0 "$p" 12345 > /dev/null || fail "setns"
check_kept "a namespace no process has"
check_kept "a namespace no process has (second look)"
kill -0 $p || fail "the writer died"

if command -v unshare > /dev/null; then
  unshare --pid --fork --kill-child --mount-proc sleep 600 &
  u=$!
  cleanup_hooks+=("kill -KILL $u 2>/dev/null")  # unshare --fork ignores SIGTERM; its child dies with it
  other=""
  for _ in $(seq 50); do
    for c in $(pgrep -P $u) $u; do
      n=$(stat -L -c %i /proc/$c/ns/pid 2>/dev/null)
      [ -n "$n" ] && [ "$n" != "$own_ns" ] && other=$n
    done
    [ -n "$other" ] && break
    sleep 0.1
  done
  if [ -n "$other" ]; then
    python3 "$TLIB/tenant_slots.py" "$(seg_file l)" setns "$p" 0 "$p" "$other" > /dev/null || fail "setns"
    check_kept "a live namespace without that pid"
  else
    note "no second pid namespace (unshare): that case is skipped"
  fi
fi

python3 "$TLIB/tenant_slots.py" "$(seg_file l)" setns "$p" 0 "$p" "$own_ns" > /dev/null || fail "setns back"
[ "$(jq_stat l 'd["processes"][0]["pid"]')" = "$p" ] || fail "the host pid is not named again: $("$CTL" stat l)"
kill $p
wait $p 2> /dev/null
for _ in $(seq 50); do [ "$(jq_stat l 'd["exited"]["processes"]')" = $((exited + 1)) ] && break; sleep 0.1; done
[ "$(jq_stat l 'd["exited"]["processes"]')" = $((exited + 1)) ] || fail "the dead writer's slot: $("$CTL" stat l --json)"
[ "$(total_bytes l write)" = $((MiB)) ] || fail "the writer's MiB counted $(total_bytes l write) bytes after it died"
