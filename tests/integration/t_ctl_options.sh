#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bonsaictl's options as its tables parse them, end to end: `help staat` exits 2 with a
# did-you-mean (not 0 with the general usage); a misspelt option names the closest
# one; `set --wait 500 SERVICE LIMIT` takes 500 as the wait, with a live process;
# `stat --count` without --watch is refused; `run -s` naming a service the file lacks
# says which it may have meant, and a new service without limits close to an existing
# one is noted; run's CMD keeps its own options; `ls` shows a byte rate no unit divides
# in human units (exact in --json).
# timeout: 60
. "$(dirname "$0")/lib/ctl_lib.sh"
expect_error() {  # expect_error WHAT TEXT CMD...: exit 2 within 20 s, stderr contains TEXT, stdout empty
  local what=$1 text=$2 rc
  shift 2
  timeout 20 "$@" >"$T/out" 2>"$T/err"
  rc=$?
  [ $rc = 2 ] || fail "$what: exit $rc, not 2: $(cat "$T/err")"
  grep -qF -- "$text" "$T/err" || fail "$what: stderr lacks '$text': $(cat "$T/err")"
  [ ! -s "$T/out" ] || fail "$what: printed on stdout: $(cat "$T/out")"
  note "$what: $(head -n1 "$T/err")"
}
expect_error "help staat" "bonsaictl help: unknown command 'staat' (did you mean 'stat'?)" "$CTL" help staat
expect_error "stat --jsn" "unknown option '--jsn' (did you mean '--json'?)" "$CTL" stat --jsn
expect_error "stat --count alone" "--count N counts the intervals of --watch SECS" "$CTL" stat --count 2
expect_error "top -n x" "bad -n 'x'" "$CTL" top -n x --batch
"$CTL" help stat | grep -qE '^  -n, --count N +with --watch' || fail "help stat lacks its --count line: $("$CTL" help stat)"

cat >"$T/svc.yaml" <<'EOF'
version: 1
services:
  video:
    limits:
      - {calls: [write], rate: 4MiB/s}
EOF
expect_error "run -s vidoe" "has no service 'vidoe' (did you mean 'video'?)" "$CTL" run -c "$T/svc.yaml" -s vidoe -- true
"$CTL" load "$T/svc.yaml" >/dev/null || fail "load failed"
"$CTL" run -s vidoe -- true 2>"$T/err" || fail "run -s vidoe (a new service) failed: $(cat "$T/err")"
grep -qF "service 'vidoe' is new and has no limits (did you mean 'video'?)" "$T/err" ||
  fail "run of a new service close to 'video' said nothing: $(cat "$T/err")"
note "run -s vidoe: $(cat "$T/err")"
"$CTL" rm vidoe >/dev/null
# CMD's own options stay CMD's, with and without --.
out=$("$CTL" run -s video sh -c 'echo "$1"' sh --json) || fail "run CMD --json failed"
[ "$out" = --json ] || fail "run took CMD's option: '$out'"
out=$("$CTL" run -s video sh -c 'echo "$1 $2 $3"' sh --help --user nobody) || fail "run CMD --help failed"
[ "$out" = "--help --user nobody" ] || fail "run took CMD's --help or --user: '$out'"

# set --wait 500 SERVICE LIMIT: a live process, the wait applied, 500 not a service.
need_cmd dd
"$CTL" run -s video -- dd if=/dev/zero of=/dev/null bs=64k count=400 status=none &  # 25 MiB: ~6 s
writer=$!
ATTACH_SECS=10 wait_attached video 1
"$CTL" set --wait 500 video 'write=64MiB/s' >"$T/out" 2>"$T/err" || fail "set --wait 500 video failed: $(cat "$T/err")"
grep -q '^video: limits #' "$T/out" || fail "set printed: $(cat "$T/out")"
grep -q '^video: applied by' "$T/out" || fail "set --wait 500 did not wait: $(cat "$T/out")"
note "set --wait 500: $(tr '\n' ' ' <"$T/out")"
wait "$writer" || fail "the writer failed"

# ls: a rate no unit divides (a fleet's grant) in human units; --json exact.
"$CTL" set video 'write=209712B/s' >/dev/null || fail "set 209712B/s failed"
"$CTL" ls >"$T/ls" || fail "ls failed"
grep -qF 'write=~204.8KiB/s' "$T/ls" || fail "ls shows: $(cat "$T/ls")"
"$CTL" ls --json | grep -qF '"write=209712B/s"' || fail "ls --json lost the exact rate: $("$CTL" ls --json)"
note "ls: $(grep video "$T/ls")"
"$CTL" rm video >/dev/null
exit 0
