#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make demo`: the BONSAI paper's co-tenant experiment (section 4.1, Figures 5 and 12) on this
# machine. Tenant A reads its file with fio (psync, 64 KiB, O_DIRECT) for 30 s; tenant B's two
# readers join at 10 s; once without limits, once with B capped by libbonsai. See docs/demo.md.
# Env: BONSAI_BUILD (dir of libbonsai.so, set by make), DEMO_DIR (default build/demo),
# DEMO_SECONDS (30), DEMO_B_START (10), DEMO_B_SHARE (B's cap in % of A's solo rate, 5),
# DEMO_FILE_MIB (size of each of the 3 data files, 1024).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
CT_BUILD=${BONSAI_BUILD:-$repo/build}
out=${DEMO_DIR:-$repo/build/demo}
dur=${DEMO_SECONDS:-30}
bstart=${DEMO_B_START:-10}
share=${DEMO_B_SHARE:-5}
mib=${DEMO_FILE_MIB:-1024}
case "$dur$bstart$share$mib" in *[!0-9]*) echo "error: DEMO_* values must be integers" >&2; exit 2 ;; esac
[ "$bstart" -ge 3 ] && [ "$dur" -ge $((bstart + 4)) ] && [ "$dur" -le 120 ] ||
  { echo "error: need 3 <= DEMO_B_START and DEMO_B_START + 4 <= DEMO_SECONDS <= 120" >&2; exit 2; }

# shellcheck source=bench/lib/cotenant_lib.sh
source "$repo/bench/lib/cotenant_lib.sh"

cat <<EOF
bonsai demo: does capping one tenant protect another?  (BONSAI paper, section 4.1)
  tenant A: fio, one reader, psync 64 KiB direct reads of its own file, full speed, ${dur} s
  tenant B: fio, two readers (each its own file) starting at ${bstart} s
  run 1: nobody limited.  run 2: B runs under LD_PRELOAD=libbonsai.so, its reads capped
  at ${share}% of what A reads alone.  Data files are deleted at the end.
EOF
ct_setup direct "$out"
ct_data_files "$mib"
if [ "$CT_DIRECT" = 1 ]; then what="fio psync 64 KiB O_DIRECT reads"; else what="fio psync 64 KiB buffered reads"; fi
ct_experiment "$dur" "$bstart" "$share" "$out/isolation.csv" "$out/isolation.png" "$what"
cat <<EOF
How to read it: in run 1 A loses a large part of its rate as soon as B's readers start;
in run 2 B is held at its cap by bonsai and A keeps (almost) all of its rate.
Plot: $out/isolation.png   Data: $out/isolation.csv   Explanation: docs/guides/experiments.md
Isolation curve (B at 5-50% of the device, bonsai vs the kernel's throttle): make bench -> build/bench/isolation_curve.{csv,png}, alone: BONSAI_BUILD=${CT_BUILD} bash bench/scenarios/isolation_curve.sh; docs/benchmarks.md
EOF
