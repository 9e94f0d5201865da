# SPDX-License-Identifier: MIT
# Shared setup of the benchmark scripts (sourced, not run): paths, the helper
# programs (built into $BONSAI_BUILD/bench), the summary table, small number helpers.
# Never touches the system beyond temporary files and, where root, one blkio cgroup.

set -u
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$BENCH_DIR/.." && pwd)
BUILD=${BONSAI_BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
LIB=$BUILD/libbonsai.so
CTL=$BUILD/bonsaictl
# A run's CSV, PNG, text and generated report go under the build tree, never into tracked
# files: bench/report/publish.sh (`make bench-publish`) copies them to bench/results and docs/.
RES=${BENCH_RESULTS:-$BUILD/bench}
case $RES in /*) ;; *) RES=$ROOT/$RES ;; esac
export BENCH_RESULTS=$RES               # scripts run by run.sh write to the same place
HELP=$BUILD/bench/bin                  # compiled helper programs
BENCH=${BENCH:-quick}
SUMMARY=$RES/summary.tsv
export LC_ALL=C
mkdir -p "$RES" "$HELP"
if [ -z "${BENCH_TMP:-}" ]; then  # the outermost script owns the scratch directory
  BENCH_TMP=$(mktemp -d /tmp/bonsai-bench.XXXXXX)
  BENCH_TMP_OWNER=$$  # scripts with their own EXIT trap remove it only if they own it
  trap 'rm -rf "$BENCH_TMP"' EXIT
fi
export BENCH_TMP

die() { echo "bench: $*" >&2; exit 1; }
note() { echo "bench: $*" >&2; }

# service_bench NAME: a bench that starts processes in services of its own. Segments go
# under the prefix bench.NAME.PID. (never a user's), pids=() collects what it starts;
# at exit those are killed, the segments and the scratch directory (if owned) removed.
service_bench() {
  [ -x "$CTL" ] || die "no $CTL: run make first"
  export BONSAI_SHM_PREFIX=bench.$1.$$.
  pids=()
  trap service_bench_cleanup EXIT
}
service_bench_cleanup() {
  [ ${#pids[@]} = 0 ] || kill "${pids[@]}" 2>/dev/null
  wait 2>/dev/null
  rm -f /dev/shm/${BONSAI_SHM_PREFIX}bonsai.* 2>/dev/null
  [ "${BENCH_TMP_OWNER:-}" != $$ ] || rm -rf "$BENCH_TMP"
}

# Builds the helper programs when missing or older than their source: `make bench`
# builds them first (bench-helpers, the same flags); this serves a script run alone.
build_helpers() {
  [ -f "$LIB" ] || die "no $LIB: run make first (or set BONSAI_BUILD)"
  local err
  err=$(LD_PRELOAD=$LIB /bin/true 2>&1) && [ -z "$err" ] || die "$LIB does not load cleanly: $err"
  local p
  for p in rx_meter tx_threads call_cost spawn_loop cotenant_stream share_tenant; do
    if [ ! -x "$HELP/$p" ] || [ "$BENCH_DIR/helpers/$p.c" -nt "$HELP/$p" ]; then
      gcc -std=gnu11 -O2 -Wall -Wextra -U_FORTIFY_SOURCE -o "$HELP/$p" "$BENCH_DIR/helpers/$p.c" -lpthread -lm ||
        die "cannot build $p"
    fi
  done
}

# lib_errors FILE: echoes the library's own complaints (a limit it rejected...) found in FILE.
lib_errors() { grep -m3 '^bonsai' "$1" >&2 || true; }

# summary_row MEASUREMENT BONSAI PEERS TARGET VERDICT: one row of the final table.
summary_row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$SUMMARY"; }

# kv "k1=v1 k2=v2" KEY: prints the value of KEY.
kv() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | head -1; }

# calc EXPR: floating-point arithmetic (awk), printed with %.4g unless FMT is given.
calc() { awk "BEGIN { v = $1; printf \"${2:-%.4g}\", v }"; }

# err_pct MEASURED CAP: signed error in percent, 3 decimals ("nan" when unmeasured).
err_pct() { awk -v m="$1" -v c="$2" 'BEGIN { if (m == "nan" || m == "" || c <= 0) print "nan"; else printf "%.3f", (m / c - 1) * 100 }'; }

# le A B: true when |A| <= B (nan fails).
abs_le() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "nan" || a == "") exit 1; if (a < 0) a = -a; exit !(a <= b) }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "nan" || a == "") exit 1; exit !(a <= b) }'; }
verdict() { if "$@"; then echo pass; else echo FAIL; fi; }

# bytes_of SIZE: "64KiB" -> 65536; accepts B KB MB GB KiB MiB GiB.
bytes_of() {
  awk -v s="$1" 'BEGIN { n = s + 0; u = s; sub(/^[0-9.]+/, "", u);
    m["B"] = 1; m[""] = 1; m["KB"] = 1e3; m["MB"] = 1e6; m["GB"] = 1e9;
    m["KiB"] = 1024; m["MiB"] = 1048576; m["GiB"] = 1073741824; printf "%.0f", n * m[u] }'
}

# cpu_pct FILE: last line "user sys wall" -> percent of one core.
cpu_pct() { tail -1 "$1" 2>/dev/null | awk '{ if ($3 > 0) printf "%.2f", ($1 + $2) / $3 * 100; else print "nan" }'; }

# with_cpu FILE CMD...: runs CMD, recording its rusage (see lib/cpu_run.py).
with_cpu() { python3 "$BENCH_DIR/lib/cpu_run.py" "$@"; }

# Waits (bounded) for the receiver's port file, prints the port.
wait_port() {
  local f=$1 i
  for i in $(seq 100); do [ -s "$f" ] && { cat "$f"; return 0; }; sleep 0.05; done
  return 1
}

# tcp_run SECS SERIES_OR_EMPTY SENDER...: the sender gets `-p PORT` appended;
# prints the receiver's result line.
tcp_run() {
  local secs=$1 series=$2; shift 2
  local pf=$BENCH_TMP/port.$RANDOM out=$BENCH_TMP/rx.$RANDOM port
  "$HELP/rx_meter" -t "$secs" -l "$pf" ${series:+-T "$series"} >"$out" &
  local rx=$!
  if port=$(wait_port "$pf"); then "$@" -p "$port" >/dev/null 2>&1; else note "receiver did not start"; fi
  wait "$rx"
  cat "$out"
  rm -f "$pf" "$out"
}

machine_info() {
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), nproc $(nproc)"
  echo "kernel: $(uname -r), $(ldd --version 2>&1 | head -1 | sed 's/.* //;s/^/glibc /')"
  echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "bonsai: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (with local changes)'), mode $BENCH"
}
