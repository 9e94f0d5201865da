# SPDX-License-Identifier: MIT
# The co-tenant experiment shared by bench/demo.sh and bench/scenarios/cotenant.sh: tenant A reads
# at full speed, tenant B's two readers join later; run once unlimited, once with B under
# libbonsai. Sourced, not run. Callers set CT_BUILD and call ct_setup first.

CT_BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)  # bench/
CT_PIDS=()
CT_CLEAN=()

ct_say() { printf '%s\n' "$*"; }
ct_die() { printf 'error: %s\n' "$*" >&2; exit 1; }

ct_cleanup() {
  set +e   # runs from the EXIT trap: a failed kill or wait must not stop the clean-up
  local p
  for p in "${CT_PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${CT_PIDS[@]}"; do wait "$p" 2>/dev/null; done
  for p in "${CT_CLEAN[@]}"; do rm -rf -- "$p"; done
}

# ct_setup MODE WORKDIR: checks tools and the library, prepares WORKDIR/{data,runs}.
ct_setup() {
  CT_MODE=$1; CT_WORK=$2
  [ -n "${CT_BUILD:-}" ] || ct_die "BONSAI_BUILD is not set (run through make, or set it to the dir holding libbonsai.so)"
  CT_LIB=$(cd "$CT_BUILD" 2>/dev/null && pwd)/libbonsai.so
  [ -f "$CT_LIB" ] || ct_die "no libbonsai.so in '$CT_BUILD' (run make first)"
  local t need=(python3 gnuplot)
  [ "$CT_MODE" = socket ] && need+=(cc) || need+=(fio)
  for t in "${need[@]}"; do
    command -v "$t" >/dev/null || ct_die "'$t' is missing: run 'make deps' (Debian packages fio gnuplot-nox python3 gcc)"
  done
  trap ct_cleanup EXIT
  trap 'exit 130' INT TERM
  mkdir -p "$CT_WORK" || ct_die "cannot create $CT_WORK"
  CT_RUNS=$(mktemp -d "$CT_WORK/runs.XXXXXX")
  CT_CLEAN+=("$CT_RUNS")
}

# ct_wait_all MESSAGE: waits for every process in CT_PIDS; dies with MESSAGE if one failed.
ct_wait_all() {
  local p rc=0
  for p in "${CT_PIDS[@]}"; do wait "$p" || rc=1; done
  CT_PIDS=()
  [ $rc = 0 ] || ct_die "$1"
}

# ---- data files ----

# ct_direct_ok DIR: does O_DIRECT work for files in DIR (not on tmpfs, some overlays)?
ct_direct_ok() {
  local probe="$1/.direct_probe"
  dd if=/dev/zero of="$probe" bs=64k count=1 oflag=direct status=none 2>/dev/null &&
    dd if="$probe" of=/dev/null bs=64k iflag=direct status=none 2>/dev/null
  local rc=$?
  rm -f "$probe"
  return $rc
}

# ct_data_files SIZE_MIB: lays out A's and B's files a, b1, b2 (real data, not holes: a
# direct read of a hole or of fallocate'd space never reaches the device). Sets CT_DATA,
# CT_DIRECT (1 when O_DIRECT works there, 0 for buffered).
ct_data_files() {
  local mib=$1 want=$1 dir f cand
  want=$((mib * 3 + 64))
  CT_DIRECT=0
  for cand in "$CT_WORK/data" "${TMPDIR:-/var/tmp}/bonsai-cotenant.$$"; do
    mkdir -p "$cand" 2>/dev/null || continue
    CT_CLEAN+=("$cand")
    [ "$CT_MODE" = buffered ] && { dir=$cand; break; }
    if ct_direct_ok "$cand"; then dir=$cand; CT_DIRECT=1; break; fi
    ct_say "note: O_DIRECT does not work in $cand ($(stat -f -c %T "$cand") filesystem); trying the next place"
  done
  if [ -z "${dir:-}" ]; then
    dir="$CT_WORK/data"
    ct_say "note: no directory here supports O_DIRECT: falling back to buffered reads with the page"
    ct_say "      cache dropped before each run (A then competes for page cache and CPU, not the device)"
  fi
  local avail_mib=$(( $(df -Pk "$dir" | awk 'NR==2 {print $4}') / 1024 ))
  [ "$avail_mib" -gt "$want" ] || ct_die "need ${want} MiB free in $dir, have ${avail_mib} MiB"
  CT_DATA=$dir
  ct_say "laying out 3 files of ${mib} MiB in $dir (direct I/O: $([ $CT_DIRECT = 1 ] && echo yes || echo no))"
  for f in a b1 b2; do
    fio --name=layout --filename="$dir/$f" --size="${mib}m" --rw=write --bs=1m --ioengine=psync \
        --direct="$CT_DIRECT" --end_fsync=1 --output=/dev/null >/dev/null 2>&1 &
    CT_PIDS+=($!)
  done
  ct_wait_all "laying out the data files failed (fio)"
}

# ct_warm_cache: buffered runs start from the same state: the page cache dropped (when root),
# then the three files read into it once, so both tenants read from memory throughout.
ct_warm_cache() {
  sync
  if [ -w /proc/sys/vm/drop_caches ] && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
    ct_say "  (page cache dropped, then the 3 files read into it)"
  else
    ct_say "  (not root: page cache not dropped; the 3 files read into it)"
  fi
  local f
  for f in a b1 b2; do dd if="$CT_DATA/$f" of=/dev/null bs=1M status=none || ct_die "cannot read $CT_DATA/$f"; done
}

# ---- one run ----

# ct_fio_run RUN_DIR DURATION B_START LIMITS: A alone, B's two readers B_START s later; B runs
# under libbonsai with BONSAI_LIMITS=LIMITS when LIMITS is not empty. fio runs each tenant's
# jobs as threads of one process (--thread), so B's one process holds one bucket for both
# readers and writes its accounting at exit (forked fio jobs leave with _exit()).
ct_fio_run() {
  local run=$1 dur=$2 bstart=$3 limits=$4 t_a t_b
  mkdir -p "$run"
  [ "$CT_DIRECT" = 1 ] || ct_warm_cache
  # invalidate=0: fio would otherwise drop the file's cached pages on every pass of the loop,
  # turning buffered reads into device reads; buffered runs start from a dropped cache instead.
  local common=(--thread --rw=read --ioengine=psync --bs=64k --direct="$CT_DIRECT" --time_based
                --invalidate=0 --log_avg_msec=1000 --log_unix_epoch=1)
  t_a=$(date +%s%3N)
  fio "${common[@]}" --runtime=$((dur + 1)) --write_bw_log="$run/A" --output="$run/A.out" \
      --name=A --filename="$CT_DATA/a" &
  CT_PIDS+=($!)
  sleep "$bstart"
  t_b=$(date +%s%3N)
  local env=()
  [ -n "$limits" ] && env=(LD_PRELOAD="$CT_LIB" BONSAI_LIMITS="$limits" BONSAI_STATS="$run/stats.%p.json")
  env "${env[@]}" fio "${common[@]}" --runtime=$((dur - bstart + 1)) --write_bw_log="$run/B" \
      --output="$run/B.out" --name=B1 --filename="$CT_DATA/b1" --name=B2 --filename="$CT_DATA/b2" &
  CT_PIDS+=($!)
  ct_wait_all "a fio run failed; see $run/A.out and $run/B.out"
  ct_meta "$run" "$t_a" "$t_b" "$bstart" "$dur"
}

# ct_socket_run RUN_DIR DURATION B_START LIMITS: each tenant streams from its own loopback
# server (one forked sender per reader); B's server and readers run under libbonsai with
# LIMITS (each reader is its own process, so per-process caps apply per stream).
ct_socket_run() {
  local run=$1 dur=$2 bstart=$3 limits=$4 t_a t_b port_a port_b i
  mkdir -p "$run"
  local env=()
  [ -n "$limits" ] && env=(LD_PRELOAD="$CT_LIB" BONSAI_LIMITS="$limits" BONSAI_STATS="$run/stats.%p.json")
  local servers=()
  "$CT_STREAM" serve "$run/port_a" $((dur + 15)) & servers+=($!)
  env "${env[@]}" "$CT_STREAM" serve "$run/port_b" $((dur + 15)) & servers+=($!)
  CT_PIDS+=("${servers[@]}")
  for i in $(seq 50); do [ -s "$run/port_a" ] && [ -s "$run/port_b" ] && break; sleep 0.1; done
  port_a=$(cat "$run/port_a" 2>/dev/null) && port_b=$(cat "$run/port_b" 2>/dev/null) ||
    ct_die "the loopback servers did not start"
  local readers=()
  t_a=$(date +%s%3N)
  "$CT_STREAM" recv "$port_a" $((dur + 1)) "$run/A_1.log" & readers+=($!)
  sleep "$bstart"
  t_b=$(date +%s%3N)
  for i in 1 2; do
    env "${env[@]}" "$CT_STREAM" recv "$port_b" $((dur - bstart + 1)) "$run/B_$i.log" & readers+=($!)
  done
  CT_PIDS+=("${readers[@]}")
  for i in "${readers[@]}"; do wait "$i" || ct_die "a stream reader failed"; done
  kill "${servers[@]}" 2>/dev/null
  for i in "${servers[@]}"; do wait "$i" 2>/dev/null || true; done
  CT_PIDS=()
  ct_meta "$run" "$t_a" "$t_b" "$bstart" "$dur"
}

# ct_meta RUN_DIR T_A T_B B_START DURATION: what cotenant_report.py needs to align the logs,
# plus the host's load average at the end of the run (others' jobs make the numbers noisy).
ct_meta() {
  printf 't_a=%s\nt_b=%s\nb_start=%s\nduration=%s\nloadavg=%s\n' "$2" "$3" "$4" "$5" \
    "$(cut -d' ' -f1 /proc/loadavg)" >"$1/meta.txt"
}

ct_build_stream() {
  CT_STREAM="$CT_RUNS/cotenant_stream"
  cc -std=gnu11 -O2 -Wall -Wextra -o "$CT_STREAM" "$CT_BENCH/helpers/cotenant_stream.c" ||
    ct_die "cannot compile bench/helpers/cotenant_stream.c"
}

ct_run() {
  if [ "$CT_MODE" = socket ]; then ct_socket_run "$@"; else ct_fio_run "$@"; fi
}

# ---- the experiment ----

# ct_experiment DURATION B_START B_SHARE_PERCENT CSV PNG WHAT: both runs, the report, the plot.
# B's cap (total of its two readers) is B_SHARE_PERCENT of A's solo rate in the first run.
# The verdict wants A's drop within CT_LO..CT_HI % without bonsai and <= CT_TARGET % with it.
ct_experiment() {
  local dur=$1 bstart=$2 share=$3 csv=$4 png=$5 what=$6
  [ "$CT_MODE" = socket ] && ct_build_stream
  ct_say "run 1/2: without limits (${dur} s; B's two readers start at ${bstart} s)"
  ct_run "$CT_RUNS/without" "$dur" "$bstart" ""
  local solo cap_kb limits
  solo=$(python3 "$CT_BENCH/report/cotenant_report.py" solo "$CT_RUNS/without") || ct_die "no rate for A"
  cap_kb=$(python3 -c "print(max(1, int($solo * 1000 * $share / 100)))")
  if [ "$CT_MODE" = socket ]; then
    limits="recv+send=$((cap_kb / 2))KB/s"   # per stream: each reader and sender is a process
  else
    limits="reads=${cap_kb}KB/s"             # B is one fio process: one bucket for both readers
  fi
  ct_say "A alone: ${solo} MB/s -> B's cap: ${share}% of it = $(python3 -c "print(round($cap_kb / 1000, 1))") MB/s in total"
  ct_say "run 2/2: B under bonsai, BONSAI_LIMITS='$limits'$([ "$CT_MODE" = socket ] && echo ' per reader and per sender')"
  ct_run "$CT_RUNS/with" "$dur" "$bstart" "$limits"
  echo "cap_mbps=$(python3 -c "print($cap_kb / 1000)")" >>"$CT_RUNS/with/meta.txt"
  python3 "$CT_BENCH/report/cotenant_report.py" report --without "$CT_RUNS/without" --with "$CT_RUNS/with" \
      --csv "$csv" --plotvars "$CT_RUNS/plotvars.gp" --what "$what" --require-stats \
      --lo "${CT_LO:-30}" --hi "${CT_HI:-60}" --target "${CT_TARGET:-5}" ||
    ct_die "the report failed"
  gnuplot -e "load '$CT_RUNS/plotvars.gp'; png='$png'" "$CT_BENCH/report/plots/cotenant_plot.gp" ||
    ct_die "gnuplot failed"
  ct_say "wrote $csv and $png"
}
