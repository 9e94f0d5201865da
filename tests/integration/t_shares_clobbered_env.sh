#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A service member that overwrites its environment (setproctitle, as nginx does) still
# reaches a host capacity installed after it started: its limits gain a ceiling by a
# live `load`, and the library attaches to the capacity under the segment prefix it
# copied at set-up (BONSAI_SHM_PREFIX is in the environment the program wiped). It then
# borrows the idle capacity: well above its own rate.
# timeout: 30
. "$(dirname "$0")/lib/shares_lib.sh"
need_prog clobber_writer
cat > "$T/own.yaml" <<YAML
version: 1
services:
  a:
    scope: service
    limits:
      - calls: [writes]
        rate: 2MiB/s
YAML
"$CTL" load "$T/own.yaml" >/dev/null || fail "load $T/own.yaml"
"$CTL" run -s a -- "$PRE/clobber_writer" 20 &
pw=$!
cleanup_hooks+=("kill $pw 2>/dev/null")
wait_attached a 1
sleep 0.3
ratio "own rate only: A / 2 MiB/s" "$(rate_over a 1.0)" $((2 * MiB)) 0.85 1.15
shares_yaml 16 2 8  # a host capacity of 16 MiB/s, a's ceiling at it
sleep 0.3
ratio "capacity loaded later: A / capacity" "$(rate_over a 1.2)" "$CAP" 0.70 1.10
kill $pw 2>/dev/null
wait $pw 2>/dev/null
true
