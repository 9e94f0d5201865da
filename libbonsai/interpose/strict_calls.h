// SPDX-License-Identifier: MIT
// Strict mode in the library (docs/reference/supervised.md "Strict mode"). Under `bonsaictl
// run --strict` the launched tree runs under a seccomp filter that sends every data
// system call to the supervisor unless it carries the launch's mark (abi/strict_mark.h).
// The library charges the calls it wraps and makes them marked: the glibc functions
// behind `real::` that are one system call each are replaced by marked system calls
// (cancellation points stay cancellation points, errno and restarts as glibc's), so a
// dynamic program pays one filter check per data call and nothing else. What glibc
// moves through its own internal calls (stdio, POSIX AIO) is left to the supervisor,
// which charges those calls: the library then passes AIO, and stdio whose bucket is
// read's or write's, through uncharged, or they would be paid twice (an fread/fwrite
// rule of its own is held by the library: interpose/stdio_calls.cc).
#pragma once
#include <atomic>
#include <cstdint>

namespace bonsai::strict {

// The mark in force (0: strict mode is off in this process).
extern constinit std::atomic<uint32_t> g_mark;

inline bool on() noexcept { return g_mark.load(std::memory_order_relaxed) != 0; }

// Called by the constructor once the limiter is set up: BONSAI_STRICT ("MARK:SERVICE",
// set by `run --strict`) names this process's service and the library is attached to
// its segment -> the marked calls are installed. Otherwise (no mark, another service's
// mark, not attached, a malformed value: said once) the calls stay glibc's, unmarked,
// and the supervisor charges them: a process the library does not limit never marks.
void setup() noexcept;

}  // namespace bonsai::strict
