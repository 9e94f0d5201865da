#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the agents take as configuration must be their own user's (issue 58):
# - `check` and `load` name a password_file that does not exist, is a symlink, belongs
#   to another user or is readable by others, at its FILE:LINE:COL, exit 2, nothing
#   changed;
# - the fleet agent refuses a password file that changed hands after `load` (owned by
#   nobody), says whose it is and what to do, and sends nothing;
# - `user:` together with `protect:` or `fleet:` (and a squeezed service of another
#   user) is refused by `check` and `load` at its FILE:LINE:COL, exit 2, nothing changed;
# - the agents refuse --user; `fleet-agent -c FILE` refuses a FILE others can write.
# timeout: 45
. "$(dirname "$0")/lib/fleet_lib.sh"
id nobody > /dev/null 2>&1 || skip "no user nobody"
[ "$(id -u)" = 0 ] || skip "needs root (files of another user)"

printf 'pw-nobody\n' > "$T/nobody.pass"; chmod 600 "$T/nobody.pass"; chown nobody "$T/nobody.pass"
printf 'pw-open\n' > "$T/open.pass"; chmod 644 "$T/open.pass"
printf 'pw-mine\n' > "$T/mine.pass"; chmod 600 "$T/mine.pass"
ln -s "$T/mine.pass" "$T/link.pass"
cat > "$T/pw.yaml" <<EOC
version: 1
services:
  a:
    fleet: {store: "redis://127.0.0.1:1", password_file: $T/none.pass}
    limits: [{calls: [write], rate: 1MiB/s}]
  b:
    fleet: {store: "redis://127.0.0.1:1", password_file: $T/nobody.pass}
    limits: [{calls: [write], rate: 1MiB/s}]
  c:
    fleet: {store: "redis://127.0.0.1:1", password_file: $T/open.pass}
    limits: [{calls: [write], rate: 1MiB/s}]
  d:
    fleet: {store: "redis://127.0.0.1:1", password_file: $T/link.pass}
    limits: [{calls: [write], rate: 1MiB/s}]
EOC
expect() { grep -qF -- "$1" "$T/out" || fail "missing diagnostic '$1' in: $(cat "$T/out")"; }
for cmd in check load; do
  "$CTL" $cmd "$T/pw.yaml" > "$T/out" 2>&1
  rc=$?
  [ $rc = 2 ] || fail "$cmd of bad password files: exit $rc, want 2: $(cat "$T/out")"
  expect "pw.yaml:4:58: password_file $T/none.pass: No such file or directory"
  expect "pw.yaml:7:58: password_file $T/nobody.pass belongs to user nobody"
  expect "chown it to user root"
  expect "pw.yaml:10:58: password_file $T/open.pass has mode 0644"
  expect "pw.yaml:13:58: password_file $T/link.pass is a symbolic link"
done
for s in a b c d; do [ -e "$(seg_file $s)" ] && fail "load of bad password files created $s"; done
[ -e "/dev/shm/${BONSAI_SHM_PREFIX}bonsai-fleet.$(id -u).d" ] && fail "load of a bad file made the fleet directory"

# The agent: the file loaded as root's, then given to nobody: refused, said, nothing sent.
fleet_redis_start
rcli CONFIG SET requirepass pw-mine > /dev/null
cat > "$T/good.yaml" <<EOC
version: 1
services:
  web:
    fleet: {store: "redis://127.0.0.1:$REDIS_PORT", password_file: $T/mine.pass, period: 100ms}
    limits: [{calls: [write], rate: 1MiB/s}]
EOC
fleet_agent_start 1
sleep 0.2
in_host 1 "$CTL" load "$T/good.yaml" > /dev/null 2> "$T/load.err" || fail "load: $(cat "$T/load.err")"
for _ in $(seq 1 30); do [ "$(fleet_field 1 'd["fleet"]["renewals"]')" -gt 0 ] && break; sleep 0.1; done
[ "$(fleet_field 1 'd["fleet"]["renewals"]')" -gt 0 ] || fail "no lease with a good password file: $(cat "$T/agent1.log")"
chown nobody "$T/mine.pass"
rcli -a pw-mine --no-auth-warning CLIENT KILL TYPE normal > /dev/null  # the agent must connect (and read the file) again
for _ in $(seq 1 30); do grep -q "belongs to user nobody" "$T/agent1.log" && break; sleep 0.1; done
grep -q "password_file $T/mine.pass belongs to user nobody.*not to user root.*chown it to user root.*chmod 600 it: refused, nothing sent" \
  "$T/agent1.log" || fail "the agent did not refuse a password file of nobody's clearly: $(cat "$T/agent1.log")"
# The agent made no new connection to Redis since (it reads the file first).
n=$(rcli -a pw-mine --no-auth-warning CLIENT LIST | grep -vc "cmd=client")
[ "$n" = 0 ] || fail "the agent connected with a file it refused ($n clients)"
chown root "$T/mine.pass"

# user: with protect: or fleet:, and a squeezed service of another user.
cat > "$T/user.yaml" <<'EOC'
version: 1
services:
  shop:
    user: nobody
    fleet: {store: "redis://127.0.0.1:1"}
    limits: [{calls: [write], rate: 1MiB/s}]
  db:
    user: nobody
    protect: {calls: [pread], p99: 2ms, squeeze: [batch]}
  batch:
    limits: [{calls: [pread], rate: 10MiB/s}]
  db2:
    protect: {calls: [pread], p99: 2ms, squeeze: [batch2]}
  batch2:
    user: nobody
    limits: [{calls: [pread], rate: 10MiB/s}]
EOC
for cmd in check load; do
  "$CTL" $cmd "$T/user.yaml" > "$T/out" 2>&1
  rc=$?
  [ $rc = 2 ] || fail "$cmd of user: with fleet:/protect:: exit $rc, want 2: $(cat "$T/out")"
  expect "user.yaml:4:11: service 'shop' has 'user: nobody' and 'fleet:'"
  expect "user.yaml:8:11: service 'db' has 'user: nobody' and 'protect:'"
  expect "user.yaml:13:51: service 'batch2' has 'user: nobody': the protect-agent acts on its own user's services only"
done
for s in shop db batch db2 batch2; do
  [ -e "$(seg_file $s)" ] && fail "load of user: with an agent created $s"
  [ -e "/dev/shm/${BONSAI_SHM_PREFIX}bonsai.$(id -u nobody).$s" ] && fail "load of user: with an agent created nobody's $s"
done

# The agents act as their own user only; -c takes only a file others cannot write.
"$CTL" fleet-agent --user nobody --host-id x > "$T/out" 2>&1
[ $? = 2 ] || fail "fleet-agent --user: not refused: $(cat "$T/out")"
expect "serves its own user's services"
"$CTL" protect-agent --user nobody "$T/good.yaml" > "$T/out" 2>&1
[ $? = 2 ] || fail "protect-agent --user: not refused: $(cat "$T/out")"
"$CTL" load --user nobody "$T/good.yaml" > "$T/out" 2>&1
[ $? = 2 ] || fail "load --user of a fleet service: not refused: $(cat "$T/out")"
expect "their agent serves its own user only"
chmod 666 "$T/good.yaml"
BONSAI_SHM_PREFIX=$(ns 2) "$CTL" fleet-agent -c "$T/good.yaml" --host-id x > "$T/out" 2>&1
[ $? = 2 ] || fail "fleet-agent -c with a world-writable file: not refused: $(cat "$T/out")"
expect "has mode 0666"
exit 0
