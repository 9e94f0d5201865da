#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Containers through CDI (issue #47, docs/reference/containers.md), with the tight numbers the
# tests (t_cdi_*) hold loosely: dd of 8 MiB in a Debian bookworm container with the
# device bonsai.dev/service=NAME under writes=2MiB/s takes 4 s (+-3%, dd's own time, REPS
# runs); two such containers share the cap (each 4 MiB: the pair in 4 s); busybox-static's
# dd through the mounted supervisor; and Podman's own start overhead: `podman run
# --rootfs ROOT /bin/true` with and without the device (median of REPS). Root, Podman,
# runc and mmdebstrap (make deps); the root is made once under $BUILD/roots like the
# libc tests'. Writes $RES/cdi.csv and summary rows. Env: REPS (quick 1, full 5: the fewest the 3% bar wants).
source "$(dirname "$0")/../lib/common.sh"
[ "$(id -u)" = 0 ] || { note "cdi: needs root (Podman with /var/run/cdi): skipped"; exit 0; }
command -v podman > /dev/null && command -v runc > /dev/null || { note "cdi: no podman/runc (make deps): skipped"; exit 0; }
service_bench cdi
# Full: 5 runs (10 before), the fewest run.sh's note gives the 3% bar: the row is their median.
if [ "$BENCH" = full ]; then REPS=${REPS:-5}; else REPS=${REPS:-1}; fi
ROOTFS=$BUILD/roots/bookworm
if [ ! -f "$ROOTFS/.bonsai-root" ]; then
  mkdir -p "$BUILD/roots"
  (flock 9; [ -f "$ROOTFS/.bonsai-root" ] || { rm -rf "$ROOTFS.tmp" &&
    mmdebstrap --variant=minbase bookworm "$ROOTFS.tmp" > "$BUILD/roots/bookworm.log" 2>&1 &&
    touch "$ROOTFS.tmp/.bonsai-root" && mv "$ROOTFS.tmp" "$ROOTFS"; }) 9> "$BUILD/roots/.lock" ||
    { note "cdi: cannot make a bookworm root (see $BUILD/roots/bookworm.log): skipped"; exit 0; }
fi
export CONTAINERS_CONF=$BENCH_TMP/containers.conf
printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\nnetns = "none"\n[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n' > "$CONTAINERS_CONF"
SPEC=/var/run/cdi/${BONSAI_SHM_PREFIX}bonsai.yaml
# Containers first: Podman needs CONTAINERS_CONF, which the scratch folder holds.
trap 'podman rm -f -t 0 $(podman ps -aq --filter "name=^${BONSAI_SHM_PREFIX}") > /dev/null 2>&1; rm -f "$SPEC"; service_bench_cleanup' EXIT
W=${BONSAI_SHM_PREFIX}web S=${BONSAI_SHM_PREFIX}shared B=${BONSAI_SHM_PREFIX}static
printf 'version: 1\nservices:\n' > "$BENCH_TMP/s.yaml"
for s in $W $S $B; do
  printf '  %s:\n    scope: %s\n    limits:\n      - calls: [writes]\n        rate: 2MiB/s\n' "$s" \
    "$([ $s = $B ] && echo process || echo service)" >> "$BENCH_TMP/s.yaml"
done
"$CTL" load "$BENCH_TMP/s.yaml" > /dev/null || die "load"
"$CTL" cdi generate --output "$SPEC" > /dev/null || die "cdi generate"
CSV=$RES/cdi.csv
echo "case,rep,seconds" > "$CSV"
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
dd_secs() { sed -n 's/.*copied, \([0-9.]*\) s.*/\1/p' "$1"; }
n=0
for r in $(seq "$REPS"); do
  for dev in none device; do
    args=()
    [ $dev = device ] && args=(--device "bonsai.dev/service=$W")
    t0=$(date +%s%N)
    podman run --rm "${args[@]}" --rootfs "$ROOTFS" /bin/true || die "podman run /bin/true ($dev)"
    echo "start_$dev,$r,$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')" >> "$CSV"
  done
  podman run --rm --device "bonsai.dev/service=$W" --rootfs "$ROOTFS" dd if=/dev/zero of=/dev/null bs=64k count=128 2> "$BENCH_TMP/dd" ||
    die "dd: $(cat "$BENCH_TMP/dd")"
  echo "dd_8MiB,$r,$(dd_secs "$BENCH_TMP/dd")" >> "$CSV"
  for i in 1 2; do
    n=$((n + 1))
    podman run -d --name "${BONSAI_SHM_PREFIX}p$n" --device "bonsai.dev/service=$S" --rootfs "$ROOTFS" \
      dd if=/dev/zero of=/dev/null bs=64k count=64 > /dev/null || die "pair"
  done
  pair=0
  for i in $((n - 1)) $n; do
    podman wait "${BONSAI_SHM_PREFIX}p$i" > /dev/null
    podman logs "${BONSAI_SHM_PREFIX}p$i" > "$BENCH_TMP/p" 2>&1
    pair=$(awk -v a="$pair" -v b="$(dd_secs "$BENCH_TMP/p")" 'BEGIN { print (b > a) ? b : a }')
    podman rm "${BONSAI_SHM_PREFIX}p$i" > /dev/null
  done
  echo "pair_4MiB_each,$r,$pair" >> "$CSV"
done
# busybox-static's dd (8 MiB) as the container's command through the mounted supervisor:
# the time the supervisor held its writes back.
if BB=$(command -v busybox) && file -L "$BB" | grep -q 'statically linked'; then
  mkdir -p "$ROOTFS/tmp/bonsai-bench" && cp "$BB" "$ROOTFS/tmp/bonsai-bench/busybox"
  for r in $(seq "$REPS"); do
    t0=$(date +%s%N)
    podman run --rm --device "bonsai.dev/service=$B" --rootfs "$ROOTFS" /run/bonsai/sv/bonsaictl sv-exec -- \
      /tmp/bonsai-bench/busybox dd if=/dev/zero of=/dev/null bs=64k count=128 2> /dev/null || die "busybox dd"
    echo "busybox_8MiB_run,$r,$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')" >> "$CSV"
  done
  rm -rf "$ROOTFS/tmp/bonsai-bench"
fi
col() { awk -F, -v c="$1" '$1 == c { print $3 }' "$CSV" | median; }
none=$(col start_none) dev=$(col start_device) dd=$(col dd_8MiB) pair=$(col pair_4MiB_each) bb=$(col busybox_8MiB_run)
ddmin=$(awk -F, '$1 == "dd_8MiB" { print $3 }' "$CSV" | sort -n | head -1)
ddmax=$(awk -F, '$1 == "dd_8MiB" { print $3 }' "$CSV" | sort -n | tail -1)
err=$(err_pct "$dd" 4)
worst=$(awk -v a="$(err_pct "$ddmin" 4)" -v b="$(err_pct "$ddmax" 4)" 'BEGIN { if (a < 0) a = -a; if (b < 0) b = -b; print (a > b) ? a : b }')
echo "cdi: podman start (run --rm /bin/true) median ${none} s without the device, ${dev} s with it" >&2
echo "cdi: dd 8 MiB at 2MiB/s in a container: median ${dd} s (${ddmin}..${ddmax} s over $REPS), error ${err}% (worst ${worst}%)" >&2
echo "cdi: two containers, 4 MiB each, one 2MiB/s cap: the later ends at ${pair} s (median)" >&2
[ -n "$bb" ] && echo "cdi: busybox-static dd 8 MiB at 2MiB/s, whole podman run: ${bb} s (median)" >&2
summary_row "dd 8 MiB in a Podman container under writes=2MiB/s (CDI device; $REPS runs, dd's own time)" \
  "${dd} s (worst error ${worst}%)" "-" "4 s +-3%" "$(verdict abs_le "$worst" 3)"
summary_row "Podman start, run --rm --rootfs /bin/true: without / with the bonsai device (median of $REPS)" \
  "${none} s / ${dev} s" "-" "-" "info"
echo "cdi: $CSV" >&2
