#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Cost: ns per unthrottled call, raw against interposed, for a 1-byte write() to
# /dev/null, a 1-byte send() on loopback TCP and a 4 KiB pread() from the page cache.
# Variants run interleaved (order shuffled each round); reports ratios of medians.
# Writes results/cost.csv (medians) and results/cost_runs.csv (every run).
source "$(dirname "$0")/../lib/common.sh"
build_helpers

# Full: 31 rounds (61 before): the ratios are medians over rounds, whose spread at 31
# (interleaved, shuffled) is already well inside the 5% bar.
if [ "$BENCH" = full ]; then ROUNDS=31; else ROUNDS=7; fi
VARIANTS="raw none other nobind"
declare -A CALLS=([write]=150000 [send]=60000 [pread]=100000)
declare -A RULE=([write]=write [send]=send [pread]=pread)
KINDS="write send pread"
PFILE=$BENCH_TMP/pread.dat
dd if=/dev/urandom of="$PFILE" bs=1M count=1 status=none && cat "$PFILE" >/dev/null
HAVE_TRICKLE=$(command -v trickle >/dev/null && echo 1 || echo 0)
[ "$HAVE_TRICKLE" = 1 ] || note "trickle not installed: no trickle column (make deps installs it)"

# run_one KIND VARIANT: prints ns per call (median of the program's batches).
run_one() {
  local k=$1 cmd=("$HELP/call_cost" "$1" "${CALLS[$1]}" "$PFILE")
  case $2 in
    raw) env -u LD_PRELOAD -u BONSAI_LIMITS "${cmd[@]}" ;;
    none) env -u BONSAI_LIMITS LD_PRELOAD="$LIB" "${cmd[@]}" ;;
    other) LD_PRELOAD="$LIB" BONSAI_LIMITS='fsync=1000/s' "${cmd[@]}" ;;
    nobind) LD_PRELOAD="$LIB" BONSAI_LIMITS="${RULE[$k]}=100GB/s" "${cmd[@]}" ;;
    trickle) env -u LD_PRELOAD -u BONSAI_LIMITS trickle -s -u 1000000 -d 1000000 "${cmd[@]}" 2>/dev/null ;;
  esac
}

RUNS=$RES/cost_runs.csv
echo "call,variant,round,ns_per_call" >"$RUNS"
note "cost ($BENCH): $ROUNDS interleaved rounds of $VARIANTS (+ trickle for send)"
for r in $(seq "$ROUNDS"); do
  for k in $KINDS; do
    vs=$VARIANTS
    [ "$k" = send ] && [ "$HAVE_TRICKLE" = 1 ] && vs="$vs trickle"
    for v in $(shuf -e $vs); do
      ns=$(run_one "$k" "$v") || ns=nan
      echo "$k,$v,$r,${ns:-nan}" >>"$RUNS"
    done
  done
done

CSV=$RES/cost.csv
echo "call,variant,runs,median_ns,ratio_to_raw,min_ns,max_ns" >"$CSV"
for k in $KINDS; do
  raw_med=""
  for v in $VARIANTS trickle; do
    vals=$(awk -F, -v k="$k" -v v="$v" '$1 == k && $2 == v && $4 != "nan" { print $4 }' "$RUNS" | sort -g)
    [ -n "$vals" ] || continue
    n=$(wc -l <<<"$vals")
    med=$(awk -v n="$n" '{ a[NR] = $1 } END { if (n % 2) print a[(n + 1) / 2]; else printf "%.2f\n", (a[n / 2] + a[n / 2 + 1]) / 2 }' <<<"$vals")
    [ "$v" = raw ] && raw_med=$med
    ratio=$(calc "$med / $raw_med" %.3f)
    echo "$k,$v,$n,$med,$ratio,$(head -1 <<<"$vals"),$(tail -1 <<<"$vals")" >>"$CSV"
    printf '  %-6s %-8s median %8s ns  ratio %s\n' "$k" "$v" "$med" "$ratio" >&2
  done
done

# ---- summary rows ----
get() { awk -F, -v k="$1" -v v="$2" -v c="$3" '$1 == k && $2 == v { print $c }' "$CSV"; }
ratios() { echo "none $(get "$1" none 5), rule on other call $(get "$1" other 5), non-binding $(get "$1" nobind 5) (raw $(get "$1" raw 4) ns)"; }
worst() { printf '%s\n' "$(get "$1" none 5)" "$(get "$1" other 5)" "$(get "$1" nobind 5)" | sort -g | tail -1; }
summary_row "cost ratio, 1-byte write() /dev/null" "$(ratios write)" "-" "<= 1.05" "$(verdict le "$(worst write)" 1.05)"
tr_ratio=$(get send trickle 5)
if [ -n "$tr_ratio" ]; then
  summary_row "cost ratio, 1-byte send() loopback TCP" "$(ratios send)" "trickle $tr_ratio" "< trickle" \
    "$(verdict awk -v a="$(worst send)" -v b="$tr_ratio" 'BEGIN { exit !(a < b) }')"
else
  summary_row "cost ratio, 1-byte send() loopback TCP" "$(ratios send)" "trickle: not installed" "< trickle" "skip"
fi
summary_row "cost ratio, 4 KiB pread() page cache" "$(ratios pread)" "-" "(info)" "-"
echo "cost: $CSV" >&2
