#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compression bench (issue 5, a Table-II-style grid): data sets x send caps x levels
# and policies, two processes under libbonsai on 127.0.0.1; completion time and
# application MiB/s, with `zstd --adapt` through `pv -L` at the same caps as the
# outside reference. Each run sends for DURATION_MS (the file is sent round again), so a
# policy has time to converge. Quick (~3 min): HIGH/LOW x 10,20 MiB/s,uncapped; BENCH=full:
# HIGH/MODERATE/LOW x 5,20,100 MiB/s,uncapped x every level and policy (~10 min).
# Env: BONSAI_BUILD, SIZE_MIB (data set size, 64), DURATION_MS (4000), OUT (CSV),
# SETS / CAPS / MODES (override the lists), DATA_DIR, REPS (runs per uncapped cell, 3).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "${BONSAI_BUILD:-$here/build}" && pwd)
LIB=$B/libbonsai.so
[ -f "$LIB" ] || { echo "no $LIB: build first" >&2; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/bonsai-cbench.XXXXXX")
trap 'rm -rf "$W"' EXIT
OUT=${OUT:-$W/results.csv}
SIZE=$(( ${SIZE_MIB:-64} * 1048576 ))
DUR=${DURATION_MS:-4000}
cc -O2 -o "$W/peer" "$here/bench/compress_peer.c" -lpthread || exit 1

# ---- data sets, from files every Debian machine has ----
fill() {  # fill OUT CMD...: repeat CMD's output until SIZE bytes
  local out=$1
  shift
  : > "$out"
  while [ "$(stat -c %s "$out")" -lt "$SIZE" ]; do "$@" >> "$out"; done
  truncate -s "$SIZE" "$out"
}
# Packages built from one source ship identical files: keep one copy of each content,
# or a large-window compressor (zstd --adapt) finds whole repeated files that
# bonsai's self-contained frames cannot, and the reference is not comparable.
unique() { xargs -r md5sum 2>/dev/null | sort -u -k1,1 | sort -k2 | cut -c35-; }
high() { ls /usr/share/doc/*/changelog*.gz | unique | while read -r f; do zcat "$f" 2>/dev/null; done; }
moderate() { find /usr/share/doc /usr/share/gtk-doc /usr/share/help -name '*.html' -size +2k 2>/dev/null | head -2000 | unique | xargs -r cat 2>/dev/null; }
low() { ls /usr/share/doc/*/changelog*.gz | unique | xargs -r cat; }
D=${DATA_DIR:-$W}  # DATA_DIR: keep the data sets between runs
mkdir -p "$D"
for s in HIGH MODERATE LOW; do
  [ "$(stat -c %s "$D/$s" 2>/dev/null)" = "$SIZE" ] || fill "$D/$s" "${s,,}"
done

if [ "${BENCH:-quick}" = full ]; then
  sets="HIGH MODERATE LOW"; caps="5 20 100 0"
  modes="fixed:none fixed:lz4 fixed:zstd:1 fixed:zstd:3 fixed:zstd:9 datarate queue zstd-adapt"
else
  sets="HIGH LOW"; caps="10 20 0"; modes="fixed:none fixed:zstd:3 fixed:zstd:9 datarate zstd-adapt"
fi
sets=${SETS:-$sets}; caps=${CAPS:-$caps}; modes=${MODES:-$modes}

# run SET CAP MODE: prints "seconds mibps"
run() {
  local set=$1 cap=$2 mode=$3 limits=""
  [ "$cap" != 0 ] && limits="writes=${cap}MiB/s"
  if [ "$mode" = zstd-adapt ]; then
    local t0 t1 pvcap=() n=$SIZE
    # A prefix that takes about DURATION_MS at 2x the cap (pv -L: powers of 1024).
    [ "$cap" != 0 ] && pvcap=(-L "${cap}m") && n=$(( cap * 2 * 1048576 * DUR / 1000 ))
    [ "$n" -gt "$SIZE" ] && n=$SIZE
    t0=$(date +%s%N)
    head -c "$n" "$D/$set" | zstd -q --adapt -c | pv -q "${pvcap[@]}" | zstd -q -d -c > /dev/null
    t1=$(date +%s%N)
    awk -v a="$t0" -v b="$t1" -v n="$n" 'BEGIN { s = (b - a) / 1e9; printf "%.3f %.2f\n", s, n / s / 1048576 }'
    return
  fi
  rm -f "$W/port"
  env LD_PRELOAD="$LIB" BONSAI_COMPRESS_ACCEPT=1 "$W/peer" --listen 0 --port-file "$W/port" --recv /dev/null > /dev/null &
  local pid=$! i
  for i in $(seq 100); do [ -s "$W/port" ] && break; sleep 0.05; done
  env LD_PRELOAD="$LIB" BONSAI_COMPRESS_TO=127.0.0.1:* BONSAI_COMPRESS_POLICY="$mode" BONSAI_LIMITS="$limits" \
    "$W/peer" --connect "$(cat "$W/port")" --send "$D/$set" --size 131072 --duration "$DUR" | sed 's/.*seconds=\([0-9.]*\) mibps=\([0-9.]*\)/\1 \2/'
  wait $pid
}

command -v zstd > /dev/null && command -v pv > /dev/null || modes=${modes/zstd-adapt/}
echo "set,cap_mibps,mode,seconds,app_mibps" > "$OUT"
printf '%-9s %5s %-14s %8s %9s\n' set cap mode seconds app_MiB/s
for set in $sets; do
  for cap in $caps; do
    # Uncapped cells run at loopback memcpy speed, where one 4 s run varies by +-5%:
    # run the modes interleaved REPS times and keep each mode's median.
    reps=1
    [ "$cap" = 0 ] && reps=${REPS:-3}
    declare -A got=()
    for r in $(seq "$reps"); do
      for mode in $modes; do
        read -r secs rate < <(run "$set" "$cap" "$mode")
        got[$mode]+="$secs $rate"$'\n'
      done
    done
    for mode in $modes; do
      read -r secs rate < <(printf '%s' "${got[$mode]}" | sort -k2 -g | awk '{ l[NR] = $0 } END { print l[int((NR + 1) / 2)] }')
      echo "$set,$cap,$mode,$secs,$rate" >> "$OUT"
      printf '%-9s %5s %-14s %8s %9s\n' "$set" "$([ "$cap" = 0 ] && echo none || echo "$cap")" "$mode" "$secs" "$rate"
    done
    unset got
  done
done
[ -n "${OUT_KEEP:-}" ] && cp "$OUT" "$OUT_KEEP"
# Per cell: datarate against the best fixed level.
awk -F, 'NR > 1 { k = $1 "," $2; if ($3 ~ /^fixed/ && $5 > best[k]) { best[k] = $5; bn[k] = $3 }
                  if ($3 == "datarate") dr[k] = $5 }
         END { for (k in dr) printf "datarate vs best fixed (%s) at %s: %+.1f%%\n", bn[k], k, (dr[k] / best[k] - 1) * 100 }' "$OUT"
