#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bonsaictl top (issue 10): --batch prints plain iterations with the limit, its use
# against the cap and no escape codes; on a terminal (tmux) it draws full screen, shows
# the service, and quits on q.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd dd tmux

"$CTL" run -s topsvc -l 'writes=4MiB/s' -- dd if=/dev/zero of=/dev/null bs=64k count=100000 status=none &
dd_pid=$!
cleanup_hooks+=("kill $dd_pid 2>/dev/null")
wait_attached topsvc 1

out=$("$CTL" top --batch -n 2 -d 0.5 topsvc) || fail "top --batch failed"
printf '%s\n' "$out" | grep -q $'\x1b' && fail "escape codes in --batch output"
[ "$(printf '%s\n' "$out" | grep -c '^bonsai top')" = 2 ] || fail "not 2 iterations: $out"
line=$(printf '%s\n' "$out" | grep '^topsvc  *writes=4MiB/s' | tail -1)
[ -n "$line" ] || fail "no row for the limit: $out"
pct=$(awk '{ for (i = 1; i <= NF; ++i) if ($i ~ /%$/) { sub(/%/, "", $i); print $i; exit } }' <<<"$line")
check_between "top's %CAP of writes=4MiB/s" "$pct" 80 110

# Full screen in a real terminal: tmux
sess="bonsai-top-$$"
cleanup_hooks+=("tmux kill-session -t $sess 2>/dev/null")
tmux new-session -d -s "$sess" -x 160 -y 30 \
  "env BONSAI_SHM_PREFIX=$BONSAI_SHM_PREFIX $CTL top -d 0.3; echo top-exited; sleep 5" || skip "tmux cannot start a session"
shown=""
for _ in $(seq 1 30); do
  sleep 0.2
  shown=$(tmux capture-pane -p -t "$sess")
  printf '%s\n' "$shown" | grep -q 'topsvc .*writes=4MiB/s' && break
done
printf '%s\n' "$shown" | grep -q 'topsvc .*writes=4MiB/s' || fail "top on a terminal does not show the service: $shown"
tmux send-keys -t "$sess" q
for _ in $(seq 1 25); do
  sleep 0.2
  tmux capture-pane -p -t "$sess" | grep -q top-exited && break
done
tmux capture-pane -p -t "$sess" | grep -q top-exited || fail "top did not quit on q"
exit 0
