#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Shares (issue 38) while things change: a tenant going idle and busy again (SIGSTOP,
# SIGCONT), a live change of the capacity (load again) and of one rate (set), and the
# borrowing service removed (rm) while it borrows: the other keeps its rate, the removed
# one's process runs on.
# timeout: 60
. "$(dirname "$0")/lib/shares_lib.sh"
shares_yaml 16 4 8
writer a null; pa=$!
writer b null; pb=$!
wait_attached a 1; wait_attached b 1
sleep 0.4
set -- $(rates_over 1.2)
ratio "both busy: B / its rate" "$2" "$RATE_B" 0.90 1.6
ratio "both busy: A + B / capacity" "$(($1 + $2))" "$CAP" 0.85 1.12

note "--- B idle"
kill -STOP $pb
sleep 0.3
ratio "B idle: A / capacity" "$(rate_over a 1.2)" "$CAP" 0.85 1.10
note "--- B busy again"
kill -CONT $pb
sleep 0.2
set -- $(rates_over 1.2)
ratio "B back: B / its rate" "$2" "$RATE_B" 0.90 1.6
ratio "B back: A / its rate" "$1" "$RATE_A" 0.90 3.2

note "--- capacity 16 -> 24 MiB/s (load)"
shares_yaml 24 4 8
sleep 0.4
set -- $(rates_over 1.2)
ratio "capacity 24: A + B / 24 MiB/s" "$(($1 + $2))" $((24 * MiB)) 0.85 1.12
ratio "capacity 24: B / its rate" "$2" "$RATE_B" 0.90 2.5

note "--- B's rate 8 -> 14 MiB/s (set)"
"$CTL" set b 'writes=14MiB/s:ceil=24MiB/s' >/dev/null || fail "set b"
sleep 0.4
set -- $(rates_over 1.2)
ratio "B at 14: B / 14 MiB/s" "$2" $((14 * MiB)) 0.90 1.6
ratio "B at 14: A / its rate" "$1" "$RATE_A" 0.90 3.0

note "--- A removed while it borrows"
kill -STOP $pb
sleep 0.3
ratio "B idle: A borrows, A / 24 MiB/s" "$(rate_over a 0.8)" $((24 * MiB)) 0.80 1.10
"$CTL" rm --force a >/dev/null || fail "rm --force a"
kill -CONT $pb
sleep 0.3
ratio "A removed: B / 14 MiB/s" "$(rate_over b 1.2)" $((14 * MiB)) 0.90 1.75
kill -0 $pa 2>/dev/null || fail "A's process died when its service was removed"
stop_writer $pa; stop_writer $pb
exit 0
