# SPDX-License-Identifier: MIT
# Helpers for the fleet tests (issue 37; sourced, not run): a private redis-server on
# 127.0.0.1 without persistence, "hosts" as namespaces (BONSAI_SHM_PREFIX <base>hN.)
# each with its own fleet agent (--host-id hN), dd writers under the fleet cap of
# service `web`, and the hosts' rates sampled together (fleet_sample.py).
. "$(dirname "${BASH_SOURCE[0]}")/ctl_lib.sh"
need_cmd redis-server redis-cli python3 dd timeout

FLEET_BASE=$BONSAI_SHM_PREFIX
FLEET_REPO=$(cd "$TLIB/../../.." && pwd)  # docs/reference/fleet.md, bonsaictl/fleet/fleet_script.cc
cleanup_hooks+=('for f in /dev/shm/${FLEET_BASE}h*; do [ -e "$f" ] && rm -rf "$f"; done')
declare -a AGENT_PID WRITER_PID

# fleet_redis_start [PORT]: redis-server on 127.0.0.1 (a free port unless given), no
# persistence; sets REDIS_PORT and REDIS_PID. Waits (up to 5 s) for PONG.
fleet_redis_start() {
  REDIS_PORT=${1:-$(free_port)}
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --logfile "$T/redis.log" &
  REDIS_PID=$!
  cleanup_hooks+=("kill -CONT $REDIS_PID 2>/dev/null; kill $REDIS_PID 2>/dev/null")
  local i
  for i in $(seq 1 100); do
    rcli ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.05
  done
  fail "redis-server did not answer on port $REDIS_PORT"
}
rcli() { timeout 5 redis-cli -p "$REDIS_PORT" "$@"; }

# evalsha_calls: the lease calls Redis has served (INFO commandstats).
evalsha_calls() { rcli info commandstats | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p' | tr -d '\r'; }

# fleet_config FILE CAP [PERIOD]: service `web`, writes capped at CAP fleet-wide.
fleet_config() {
  cat > "$1" <<EOC
version: 1
services:
  web:
    fleet:
      store: redis://127.0.0.1:$REDIS_PORT
      period: ${3:-250ms}
    limits:
      - calls: [write]
        rate: $2
EOC
}

ns() { echo "${FLEET_BASE}h$1."; }
# in_host I CMD...: CMD in host I's namespace. (Background jobs below call env directly:
# a function run with & is a subshell, and killing $! would leave CMD running.)
in_host() { local i=$1; shift; BONSAI_SHM_PREFIX="$(ns "$i")" "$@"; }

# fleet_agent_start I: host I's agent (host id hI), its stderr in $T/agentI.log.
fleet_agent_start() {
  env BONSAI_SHM_PREFIX="$(ns "$1")" "$CTL" fleet-agent --host-id "h$1" 2>>"$T/agent$1.log" &
  AGENT_PID[$1]=$!
  cleanup_hooks+=("kill ${AGENT_PID[$1]} 2>/dev/null")
}

# fleet_hosts_up N FILE: N hosts, each its agent (first: `load` then finds the lock
# held and starts none) and the service loaded.
fleet_hosts_up() {
  local i
  for i in $(seq 1 "$1"); do fleet_agent_start "$i"; done
  sleep 0.2
  for i in $(seq 1 "$1"); do in_host "$i" "$CTL" load "$2" >/dev/null 2>>"$T/load.log" || fail "load on host $i"; done
}

# fleet_writer_start I FILE SECS: dd writing as fast as the cap lets it, for SECS at most.
fleet_writer_start() {
  env BONSAI_SHM_PREFIX="$(ns "$1")" timeout "$3" "$CTL" run -c "$2" -s web -- dd if=/dev/zero of=/dev/null bs=16k \
    count=100000000 status=none 2>>"$T/writer$1.log" &
  WRITER_PID[$1]=$!
  cleanup_hooks+=("kill ${WRITER_PID[$1]} 2>/dev/null")
}

# fleet_setup HOSTS CAP_MIB WRITERS SECS: the fleet tests' common start. A private Redis
# (fleet_redis_start); $cfg, $T/fleet.yaml, capping service `web`'s writes at CAP_MIB
# MiB/s fleet-wide ($cap: the same in bytes); HOSTS hosts up, each with its agent and the
# service loaded; a writer on each host listed in WRITERS (e.g. "1 2 3 4") for SECS at
# most; then 1.5 s for the leases to settle.
fleet_setup() {
  local i
  cap=$(($2 * MiB))
  fleet_redis_start
  cfg=$T/fleet.yaml
  fleet_config "$cfg" "${2}MiB/s"
  fleet_hosts_up "$1" "$cfg"
  for i in $3; do fleet_writer_start "$i" "$cfg" "$4"; done
  sleep 1.5
}

# fleet_sample N SECS STEP: the N hosts' byte counts, sampled (JSON, fleet_sample.py).
fleet_sample() { python3 "$TLIB/fleet_sample.py" "$CTL" "$FLEET_BASE" "$1" "$2" "$3"; }

# sample_eval JSON EXPR: a Python expression over the samples: `t` (seconds), `b` (rows
# of per-host bytes), `rate(h)` host h's (1-based) bytes/s over the whole window,
# `agg()` the hosts' sum, `min_window_rate(h, secs)` h's lowest rate over windows of secs.
sample_eval() {
  python3 -c '
import json, sys
d = json.loads(sys.argv[1]); t = d["t"]; b = d["bytes"]
def rate(h, i=0, j=-1): return (b[j][h - 1] - b[i][h - 1]) / (t[j] - t[i])
def agg(): return sum(rate(h) for h in range(1, len(b[0]) + 1))
def min_window_rate(h, secs):
    out = []
    for i in range(len(t)):
        for j in range(i + 1, len(t)):
            if t[j] - t[i] >= secs:
                out.append(rate(h, i, j)); break
    return min(out)
print(eval(sys.argv[2]))' "$1" "$2"
}

# fleet_field I EXPR: a Python expression over host I's stat document `d` (its fleet: d["fleet"]).
fleet_field() { BONSAI_SHM_PREFIX="$(ns "$1")" jq_stat web "$2"; }
