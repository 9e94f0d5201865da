# SPDX-License-Identifier: MIT
# Helpers for the fleet tests through Redis Sentinel (sourced after fleet_lib.sh): a
# primary and a replica redis-server and three redis-sentinel, all on free 127.0.0.1
# ports with their files in $T; the writers write into FIFOs read by fleet_meter.py.
need_cmd redis-sentinel mkfifo

SENTINEL_MASTER=bonsai
declare -a SENTINEL_PORT SENTINEL_PID

# sentinel_cluster_up DOWN_AFTER_MS: sets PRIMARY_PORT/PRIMARY_PID (fleet_lib's
# REDIS_PORT too, at first), REPLICA_PORT/REPLICA_PID, SENTINEL_PORT[1..3]; waits
# (bounded) until the replica is in sync and every Sentinel knows the replica and the
# two other Sentinels (quorum 2: a failover can be decided).
sentinel_cluster_up() {
  local i j conf n ports
  # Five free ports from one python3 (each start of it costs seconds on a loaded machine).
  ports=($(python3 -c '
import socket
ss = [socket.socket() for _ in range(5)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))'))
  [ "${#ports[@]}" = 5 ] || fail "no free ports"
  # --dir: a replica writes the primary's snapshot where it runs.
  PRIMARY_PORT=${ports[0]} REPLICA_PORT=${ports[1]}
  redis-server --port "$PRIMARY_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$T" --logfile "$T/primary.log" &
  PRIMARY_PID=$!
  cleanup_hooks+=("kill $PRIMARY_PID 2>/dev/null; wait $PRIMARY_PID 2>/dev/null")
  REDIS_PORT=$PRIMARY_PORT  # fleet_lib's rcli
  for i in $(seq 1 100); do
    rcli ping 2>/dev/null | grep -q PONG && break
    [ "$i" = 100 ] && fail "the primary did not answer on port $PRIMARY_PORT"
    sleep 0.05
  done
  redis-server --port "$REPLICA_PORT" --bind 127.0.0.1 --save '' --appendonly no --replicaof 127.0.0.1 "$PRIMARY_PORT" \
    --dir "$T" --logfile "$T/replica.log" &
  REPLICA_PID=$!
  cleanup_hooks+=("kill $REPLICA_PID 2>/dev/null; wait $REPLICA_PID 2>/dev/null")
  for i in $(seq 1 100); do
    timeout 5 redis-cli -p "$REPLICA_PORT" info replication 2>/dev/null | grep -q 'master_link_status:up' && break
    [ "$i" = 100 ] && fail "the replica on port $REPLICA_PORT never synced with the primary"
    sleep 0.1
  done
  for i in 1 2 3; do SENTINEL_PORT[$i]=${ports[$((i + 1))]}; done
  for i in 1 2 3; do
    conf=$T/sentinel$i.conf  # a Sentinel rewrites its own file: one each, writable
    # Each Sentinel told its id, the replica and the two others (the lines a Sentinel
    # writes itself once it has found them): no 2 s hello rounds before a failover
    # can be decided.
    {
      echo "port ${SENTINEL_PORT[$i]}"
      echo "bind 127.0.0.1"
      echo "dir $T"
      echo "logfile $T/sentinel$i.log"
      echo "sentinel myid $(printf '%040d' "$i")"
      echo "sentinel monitor $SENTINEL_MASTER 127.0.0.1 $PRIMARY_PORT 2"
      echo "sentinel down-after-milliseconds $SENTINEL_MASTER $1"
      echo "sentinel failover-timeout $SENTINEL_MASTER 5000"
      echo "sentinel parallel-syncs $SENTINEL_MASTER 1"
      echo "sentinel known-replica $SENTINEL_MASTER 127.0.0.1 $REPLICA_PORT"
      for j in 1 2 3; do
        [ "$j" = "$i" ] || echo "sentinel known-sentinel $SENTINEL_MASTER 127.0.0.1 ${SENTINEL_PORT[$j]} $(printf '%040d' "$j")"
      done
    } > "$conf"
    redis-sentinel "$conf" &
    SENTINEL_PID[$i]=$!
    cleanup_hooks+=("kill ${SENTINEL_PID[$i]} 2>/dev/null; wait ${SENTINEL_PID[$i]} 2>/dev/null")
  done
  for i in 1 2 3; do
    for j in $(seq 1 150); do
      n=$(timeout 5 redis-cli -p "${SENTINEL_PORT[$i]}" sentinel master "$SENTINEL_MASTER" 2>/dev/null | tr -d '\r' |
        awk 'k == "num-slaves" { s = $0 } k == "num-other-sentinels" { o = $0 } { k = $0 } END { print s "/" o }')
      [ "$n" = 1/2 ] && break
      [ "$j" = 150 ] && fail "Sentinel $i never saw the replica and two other Sentinels (replicas/others: $n)"
      sleep 0.05
    done
  done
}

# sentinel_store: the store address naming the three Sentinels.
sentinel_store() {
  echo "redis+sentinel://127.0.0.1:${SENTINEL_PORT[1]},127.0.0.1:${SENTINEL_PORT[2]},127.0.0.1:${SENTINEL_PORT[3]}/$SENTINEL_MASTER"
}

# sentinel_primary_port [I]: the primary's port as Sentinel I (default 1) names it.
sentinel_primary_port() {
  timeout 5 redis-cli -p "${SENTINEL_PORT[${1:-1}]}" sentinel get-master-addr-by-name "$SENTINEL_MASTER" 2>/dev/null |
    tr -d '\r' | sed -n 2p
}

# fleet_fifo_writer_start I FILE SECS DIR: host I's writer, as fast as the cap lets it,
# into the FIFO DIR/wI (fleet_meter.py reads it).
fleet_fifo_writer_start() {
  env BONSAI_SHM_PREFIX="$(ns "$1")" timeout "$3" "$CTL" run -c "$2" -s web -- dd if=/dev/zero of="$4/w$1" bs=16k \
    count=100000000 status=none 2>>"$T/writer$1.log" &
  WRITER_PID[$1]=$!
  cleanup_hooks+=("kill ${WRITER_PID[$1]} 2>/dev/null")
}
