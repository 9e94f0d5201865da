#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue #8 item 6: one huge stdio call (fwrite, fwrite of 4 KiB items, fwrite_unlocked,
# fread, fread_unlocked, fputs, fgets, getline) under a cap on it takes its time
# (4 MiB at 2 MiB/s: ~2 s; before, 0.05-0.15 s: charged after the fact) and moves its
# data intact; the FILE stays usable (fgets/getline: the next line reads right).
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/shape_cases.sh"
need_prog shape_calls
imports "$PRE/shape_calls" fwrite fwrite_unlocked fread fread_unlocked fputs fgets __getdelim  # getline: inlined to __getdelim at -O2
CASES="fwrite:fwrite fwrite_items:fwrite fwrite_unlocked:fwrite fputs:fwrite fread:fread
fread_unlocked:fread fgets:fread getline:fread"
for c in $CASES; do shape_start "${c%%:*}" "${c#*:}=2MiB/s" 4M; done
shape_wait
for c in $CASES; do
  bytes=$((4 * MiB))
  case ${c%%:*} in fgets|getline) bytes=$((bytes + 6)) ;; esac  # and the next line, "after\n"
  shape_check "${c%%:*}" "${c#*:}" $bytes 1.5
done
