#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The 256 KiB of text every golden stream here carries (deterministic: awk, no data file).
seq 1 40000 | awk '{ printf "line %d: the quick brown fox %d jumps over %s\n", $1, $1 % 97, ($1 % 7 ? "the lazy dog" : "a sleeping cat") }' |
  head -c 262144
