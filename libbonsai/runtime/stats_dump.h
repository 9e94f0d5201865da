// SPDX-License-Identifier: MIT
// The JSON lines the library appends at exit, each to the file an option names: the
// one writer (ExitLine) and its first user, BONSAI_STATS=FILE: each process appends one
// line with its counters per call name (calls, bytes, throttled, wait_ns; wire_bytes,
// refused, shortened and held_ns where non-zero). "%p" in FILE becomes the pid. (BONSAI_COMPRESS_STATS:
// interpose/compressed/compress_stats.cc.)
#pragma once
#include <cstddef>

#include "abi/counters_abi.h"
#include "log/out_file.h"
#include "runtime/options.h"

namespace bonsai {

// A line to append at exit to the file option `opt` names (its path copied at set-up:
// some workers lose the environment).
struct ExitLine {
  Opt opt;
  char path[kOutPathMax];  // "": not asked for
};

// Copies the path of `line.opt` now. @return true if a line is to be written.
bool exit_line_setup(ExitLine& line) noexcept;

// Appends `json` (`len` bytes, no newline; `json` has room for one more byte) and a
// newline to the line's file in one write (lines never interleave); nothing without a
// path. errno preserved; no allocation.
void exit_line_write(const ExitLine& line, char* json, size_t len) noexcept;

// Remembers the BONSAI_STATS path (constructor time: some workers lose the
// environment). @return true if stats are to be written.
bool stats_path_from_env() noexcept;

// Formats `pc` as one JSON object (no newline) into `buf`.
// @return length written, or 0 if `cap` was too small.
size_t stats_format_json(const ProcessCounters& pc, int pid, char* buf, size_t cap) noexcept;

// Writes the BONSAI_STATS JSON line for this process (at exit).
void stats_dump_at_exit() noexcept;

}  // namespace bonsai
