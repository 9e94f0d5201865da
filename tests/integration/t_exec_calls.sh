#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue #16: a program started through any exec or spawn call with an empty or
# foreign environment stays in the service and holds its cap (execve execv execvp
# execvpe execl execle execlp fexecve execveat posix_spawn posix_spawnp, vfork +
# execve); a child that closes every descriptor (closefrom, close_range, a close()
# loop, the same through syscall()) and changes uid still finds the service (root only); a child given another
# BONSAI_SERVICE joins that one; BONSAI_LEAVE=1 is the way out.
# timeout: 50
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog exec_calls
imports "$PRE/exec_calls" execve execv execvp execvpe execl execle execlp fexecve execveat posix_spawn posix_spawnp \
  closefrom close_range
bytes=$((3 * MiB))
cap=$((4 * MiB))

# MODE: the writer's 3 MiB under write=4MiB/s, through MODE.
capped() {
  local mode=$1 s secs
  s=$(now_ns)
  "$CTL" run -s ex -l 'write=4MiB/s' -- "$PRE/exec_calls" "$mode" $bytes || fail "$mode: exited $?"
  secs=$(secs_since "$s")
  check_rate "$mode" $bytes "$secs" $cap 0.5 1.02
}

for mode in execve execv execvp execvpe execl execle execlp fexecve execveat posix_spawn posix_spawnp vfork; do
  capped "$mode"
done

if nobody_loads_lib; then
  # Segment root's, mode 0600: only the inherited (and protected) descriptor leads back.
  for mode in closefrom_setuid close_range_setuid close_loop_setuid sys_close_range_setuid sys_close_loop_setuid; do capped "$mode"; done
else
  note "SKIP (not root, or user nobody cannot read $LIB): closing every descriptor and changing uid"
fi

# Another service given on purpose: the child joins it (unlimited here) and is counted there.
"$CTL" run -s exo -- true || fail "cannot create service exo"
s=$(now_ns)
EXEC_FOREIGN=exo "$CTL" run -s ex -l 'write=4MiB/s' -- "$PRE/exec_calls" foreign $bytes || fail "foreign: exited $?"
secs=$(secs_since "$s")
check_between "a child given BONSAI_SERVICE=exo is not held by ex's cap (s)" "$secs" 0 0.5
[ "$(total_bytes exo write)" = $bytes ] || fail "service exo counted $(total_bytes exo write) bytes, not $bytes"

# The way out: BONSAI_LEAVE=1 in the child's environment.
before=$(total_bytes ex write)
s=$(now_ns)
"$CTL" run -s ex -l 'write=4MiB/s' -- "$PRE/exec_calls" leave $bytes || fail "leave: exited $?"
secs=$(secs_since "$s")
check_between "a child with BONSAI_LEAVE=1 runs unlimited (s)" "$secs" 0 0.5
[ "$(total_bytes ex write)" = "$before" ] || fail "the leaving child was counted in ex"
