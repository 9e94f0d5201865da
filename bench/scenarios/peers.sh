#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Peers on the same runs, bonsai and the alternative back to back: `pv -L` on a pipe
# (cat /dev/zero | limiter | reader), trickle on a loopback TCP transfer, and the
# kernel's block throttle (cgroup v1 blkio / v2 io.max, root only) on O_DIRECT reads.
# Writes results/peers.csv and results/series/*.csv (10 ms rates for the plot).
source "$(dirname "$0")/../lib/common.sh"
build_helpers

SECS=1.5  # quick: 1.5 s a point (the 300 s budget); full 4 (8 before: 40 windows of 100 ms hold the CV)
PIPE_CAPS="1MiB 10MiB"
TCP_CAPS="1MiB 100MiB"  # quick: the ends of the range
[ "$BENCH" = full ] && { SECS=4; PIPE_CAPS="1MiB 10MiB 100MiB"; TCP_CAPS="1MiB 10MiB 100MiB"; }
CSV=$RES/peers.csv
SERIES=$RES/series
mkdir -p "$SERIES"
rm -f "$SERIES"/*.csv
echo "medium,cap,limiter,call_bytes,rate_bps,err_pct,cv10,cv100,cv1000,cpu_pct,note" >"$CSV"

row() {  # MEDIUM CAP LIMITER SIZE RXLINE CPUFILE NOTE
  local rate err
  rate=$(kv "$5" rate)
  err=$(err_pct "${rate:-nan}" "$(bytes_of "$2")")
  echo "$1,$2,$3,$4,${rate:-nan},$err,$(kv "$5" cv10),$(kv "$5" cv100),$(kv "$5" cv1000),$(cpu_pct "$6"),$7" >>"$CSV"
  printf '  %-5s %-7s %-8s rate %12s B/s  err %8s%%  cv100 %s\n' "$1" "$2" "$3" "${rate:-nan}" "$err" "$(kv "$5" cv100)" >&2
}
series_of() { [ "$2" = 10MiB ] && echo "$SERIES/$1.csv"; }  # one series per limiter, at 10 MiB/s
tcp_size() { case $1 in 100MiB) echo 65536 ;; *) echo 4096 ;; esac; }

# ---- pipe: bonsai on cat's writes against pv -L ----
have_pv=$(command -v pv >/dev/null && echo 1 || echo 0)
[ "$have_pv" = 1 ] || note "pv not installed: pipe peer skipped (make deps installs it)"
for cap in $PIPE_CAPS; do
  cpu=$BENCH_TMP/cpu.peer; : >"$cpu"
  line=$(with_cpu "$cpu" env LD_PRELOAD="$LIB" BONSAI_LIMITS="write=$cap/s" cat /dev/zero 2>/dev/null |
    "$HELP/rx_meter" -t "$SECS" ${SERIES:+-T "$(series_of pipe_bonsai "$cap")"})
  row pipe "$cap" bonsai 131072 "$line" "$cpu" ""
  if [ "$have_pv" = 1 ]; then
    : >"$cpu"
    line=$(cat /dev/zero 2>/dev/null | with_cpu "$cpu" pv -q -L "$(bytes_of "$cap")" 2>/dev/null |
      "$HELP/rx_meter" -t "$SECS" -T "$(series_of pipe_pv "$cap")")
    row pipe "$cap" pv "" "$line" "$cpu" "pv -L"
  fi
done

# ---- loopback TCP: bonsai on send() against trickle -s -u ----
have_trickle=$(command -v trickle >/dev/null && echo 1 || echo 0)
[ "$have_trickle" = 1 ] || note "trickle not installed: TCP peer skipped (make deps installs it)"
for cap in $TCP_CAPS; do
  size=$(tcp_size "$cap")
  cpu=$BENCH_TMP/cpu.peer; : >"$cpu"
  line=$(tcp_run "$SECS" "$(series_of tcp_bonsai "$cap")" \
    with_cpu "$cpu" env LD_PRELOAD="$LIB" BONSAI_LIMITS="send=$cap/s" "$HELP/tx_threads" -b "$size")
  row tcp "$cap" bonsai "$size" "$line" "$cpu" ""
  if [ "$have_trickle" = 1 ]; then
    : >"$cpu"
    kb=$(( $(bytes_of "$cap") / 1024 ))  # trickle's KB/s are 1024 bytes
    line=$(tcp_run "$SECS" "$(series_of tcp_trickle "$cap")" \
      with_cpu "$cpu" trickle -s -u "$kb" "$HELP/tx_threads" -b "$size")
    row tcp "$cap" trickle "$size" "$line" "$cpu" "trickle -s -u $kb"
  fi
done

# ---- block device: bonsai on read() against the kernel's throttle ----
BLK_CAP=10MiB
blk_file=$BENCH_TMP/blk.dat  # /tmp: here the same filesystem as /work; the device is named below
blk_dev=$(stat -c '%Hd:%Ld' "$BENCH_TMP" 2>/dev/null)
# Throttles apply to whole disks: a partition is replaced by its disk.
if [ -f "/sys/dev/block/$blk_dev/partition" ]; then
  blk_dev=$(cat "$(readlink -f "/sys/dev/block/$blk_dev")/../dev" 2>/dev/null)
fi
blk_cg=""
blk_skip=""
if [ "$(id -u)" != 0 ]; then
  blk_skip="not root"
elif [ -f /sys/fs/cgroup/blkio/blkio.throttle.read_bps_device ]; then
  blk_cg=/sys/fs/cgroup/blkio/bonsai-bench-$$
  blk_knob=blkio.throttle.read_bps_device
  blk_val="$blk_dev $(bytes_of $BLK_CAP)"
elif grep -qw io /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
  blk_cg=/sys/fs/cgroup/bonsai-bench-$$
  blk_knob=io.max
  blk_val="$blk_dev rbps=$(bytes_of $BLK_CAP)"
else
  blk_skip="no blkio (v1) or io (v2) cgroup controller"
fi
[ -e "/sys/dev/block/$blk_dev" ] || [ -n "$blk_skip" ] || blk_skip="$BENCH_TMP is not on a block device ($blk_dev: tmpfs/overlay?)"
if [ -z "$blk_skip" ]; then
  dd if=/dev/urandom of="$blk_file" bs=1M count=$(( $(bytes_of $BLK_CAP) * (${SECS%.*} + 3) / 1048576 )) conv=fsync status=none
  raw_disk() { kv "$(dd if="$blk_file" iflag=direct bs=64k status=none 2>/dev/null | "$HELP/rx_meter" -t 0.6)" rate; }
  blk_raw=$(raw_disk)
  cpu=$BENCH_TMP/cpu.peer; : >"$cpu"
  line=$(with_cpu "$cpu" env LD_PRELOAD="$LIB" BONSAI_LIMITS="read=$BLK_CAP/s" \
    dd if="$blk_file" iflag=direct bs=64k status=none 2>/dev/null | "$HELP/rx_meter" -t "$SECS" -T "$SERIES/blk_bonsai.csv")
  row disk "$BLK_CAP" bonsai 65536 "$line" "$cpu" "O_DIRECT reads"
  if mkdir "$blk_cg" 2>/dev/null && echo "$blk_val" >"$blk_cg/$blk_knob" 2>/dev/null; then
    : >"$cpu"
    line=$(with_cpu "$cpu" sh -c "echo \$\$ >'$blk_cg/cgroup.procs' && exec dd if='$blk_file' iflag=direct bs=64k status=none" \
      2>/dev/null | "$HELP/rx_meter" -t "$SECS" -T "$SERIES/blk_kernel.csv")
    row disk "$BLK_CAP" "kernel" 65536 "$line" "$cpu" "$blk_knob"
  else
    blk_skip="cannot set $blk_knob on $blk_cg"
  fi
  [ -n "$blk_cg" ] && rmdir "$blk_cg" 2>/dev/null
  blk_raw=$(printf '%s\n' "$blk_raw" "$(raw_disk)" | sort -g | head -1)
  note "disk: unthrottled O_DIRECT reads moved $(calc "${blk_raw:-0} / 1048576" %.0f) MiB/s (lower of before/after)"
  blk_busy=$(awk -v r="$blk_raw" -v c="$(bytes_of $BLK_CAP)" 'BEGIN { if (r == "" || r == "nan" || r < 1.5 * c) print 1 }')
  rm -f "$blk_file"
fi
[ -n "$blk_skip" ] && note "kernel block throttle skipped: $blk_skip"

# ---- summary rows ----
get() { awk -F, -v m="$1" -v c="$2" -v l="$3" -v k="$4" '$1 == m && $2 == c && $3 == l { print $k }' "$CSV"; }
closer() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "nan" || a == "") exit 1; if (b == "" || b == "nan") exit 0;
  if (a < 0) a = -a; if (b < 0) b = -b; exit !(a <= b) }'; }
for cap in $TCP_CAPS; do
  b=$(get tcp "$cap" bonsai 6) t=$(get tcp "$cap" trickle 6)
  summary_row "rate error, loopback TCP $cap/s" "$b%" "trickle ${t:-n/a}%" "<= 0.5%, < trickle" \
    "$(verdict eval "abs_le '$b' 0.5 && closer '$b' '$t'")"
done
for cap in $PIPE_CAPS; do
  b=$(get pipe "$cap" bonsai 6) p=$(get pipe "$cap" pv 6)
  bc=$(get pipe "$cap" bonsai 8) pc=$(get pipe "$cap" pv 8)
  if [ "$cap" = 10MiB ]; then  # the CV target is set at 10 MiB/s
    summary_row "rate error / CV(100 ms), pipe $cap/s" "$b% / $bc" "pv -L ${p:-n/a}% / ${pc:-n/a}" "<= 0.5% / <= 0.02" \
      "$(verdict eval "abs_le '$b' 0.5 && le '$bc' 0.02")"
  else
    summary_row "rate error / CV(100 ms), pipe $cap/s" "$b% / $bc" "pv -L ${p:-n/a}% / ${pc:-n/a}" "<= 0.5%" "$(verdict abs_le "$b" 0.5)"
  fi
done
if [ -z "$blk_skip" ]; then
  b=$(get disk $BLK_CAP bonsai 6) k=$(get disk $BLK_CAP kernel 6)
  bc=$(get disk $BLK_CAP bonsai 8) kc=$(get disk $BLK_CAP kernel 8)
  v=$(verdict abs_le "$b" 0.5)
  [ -n "${blk_busy:-}" ] && v="skip (device busy: raw $(calc "${blk_raw:-0} / 1048576" %.0f) MiB/s)"
  summary_row "rate error / CV(100 ms), O_DIRECT reads $BLK_CAP/s" "$b% / $bc" "kernel $blk_knob $k% / $kc" "<= 0.5%" "$v"
else
  summary_row "kernel block throttle" "-" "skipped: $blk_skip" "-" "skip"
fi
echo "peers: $CSV" >&2
