// SPDX-License-Identifier: MIT
// The event loop's compression budget: the level a non-blocking sender's
// next chunk may run at is capped by the CPU time one chunk may take on its thread.
// A policy sees its connection alone, and at a binding cap a blocking sender's CPU
// waits anyway, so `datarate` takes compression as free and climbs to zstd:9. An
// event loop (nginx, node, any epoll/poll server) serves all its descriptors on one
// thread: there the thread's time is the shared resource, and 40 connections each
// compressing "for free" at zstd:9 took the whole thread (small requests waited
// 0.3-3.7 s). So on a non-blocking call the chunk's level is capped by a per-chunk
// time budget, and the thread's budget follows the share of its time the thread spent
// compressing over its connections: above kLoopShare it shrinks, well below it grows.
// why: see docs/notes/compression-measured.md#an-event-loops-thread-is-not-free
// Pure but for loop_budget_of_thread (time passed in, no allocation).
#pragma once
#include <cstddef>
#include <cstdint>

#include "compress/policy_model.h"

namespace bonsai::compress {

// One chunk's compression may hold the thread at most this long, and never less than
// the floor (lz4 fits it: ~0.2 ms for a 128 KiB chunk); a thread starts at kLoopStartNs
// (zstd:1 for a 128 KiB chunk: 40 connections opened at once are all at their first
// chunk and round, and a dearer start held the loop for their first second).
inline constexpr double kLoopChunkMaxNs = 4e6;
inline constexpr double kLoopChunkMinNs = 5e5;
inline constexpr double kLoopStartNs = 1e6;
// The share of the thread's time its compression (chunks and calibration runs) may
// take: a loop compressing a third of its time still answers a new request after a
// chunk or two. Above it the budget shrinks by kLoopShare/share (at most halves) every
// window; below kLoopGrowShare of it it grows by at most kLoopGrow.
inline constexpr double kLoopShare = 0.3;
inline constexpr double kLoopGrowShare = 0.6;
inline constexpr double kLoopGrow = 1.25;
inline constexpr uint64_t kLoopWindowNs = 100'000'000;
// Calibration (every connection's rounds, compress/tx_calibrate.h) may take this share
// of the thread's time, over all its connections: a round per connection and second
// at three levels, two runs each, cost 40 connections ~17% of nginx's worker.
inline constexpr double kLoopCalShare = 0.05;

struct LoopBudget {
  uint64_t win_start_ns;  // 0: not started
  uint64_t win_cpu_ns;    // compression time in the window so far (calibration included)
  uint64_t win_cal_ns;    // calibration time in the window so far
  double chunk_ns;        // the budget of one chunk; 0: kLoopStartNs
  double share;           // the share of its time the thread compressed (smoothed over windows)
  double cal_share;       // the share of it calibrating (smoothed likewise)
};

// The calling thread's budget (thread-local, zero-initialised).
LoopBudget* loop_budget_of_thread() noexcept;

// The budget of the next chunk (ns).
double loop_budget_chunk_ns(const LoopBudget& b) noexcept;

// A non-blocking call's chunk compressed for `cpu_ns` and calibrated for `cal_ns` at
// `now_ns` (0 for a chunk sent raw: windows end on every chunk). Ends the window when
// due. @return whether a window ended (the budget was set again).
bool loop_budget_note(LoopBudget& b, uint64_t now_ns, uint64_t cpu_ns, uint64_t cal_ns) noexcept;

// Whether a connection of this thread may calibrate now: the thread's calibration
// stays below kLoopCalShare of its time (smoothed, and in the window so far).
bool loop_may_calibrate(const LoopBudget& b, uint64_t now_ns) noexcept;

// Predicted time of `len` bytes at `level` by the connection's model (its calibration
// times the stream's correction); < 0: not known.
double loop_level_ns(const CostModel& m, uint8_t level, size_t len) noexcept;

// The highest level of 0..want whose chunk of `len` bytes fits `budget_ns`: levels
// are tried upwards and the first that does not fit, or is not known, ends the climb
// (the list goes from cheap to dear: calibration learns the next level up, see
// tx_calibrate). Level 1 (the cheapest compressing level) is always allowed when
// `want` >= 1; with no level calibrated yet, `want` is.
uint8_t loop_level_cap(const CostModel& m, uint8_t want, size_t len, double budget_ns) noexcept;

}  // namespace bonsai::compress
