// SPDX-License-Identifier: MIT
// The cheap cost model behind the `datarate` policy: per level, a sampled
// compression ratio and CPU cost; for the link, the wire rate seen while the cap
// binds and the cost of the send path. Predicts each level's application data rate.
// Pure: numbers in, numbers out (no clock, no I/O, no allocation).
#pragma once
#include <cstdint>

#include "compress/codec.h"

namespace bonsai::compress {

struct LevelModel {
  double ratio;        // application bytes per wire byte (>= 1)
  double cpu_ns_byte;  // compression time per application byte
  bool known;
  // The ratio from rounds that compressed one chunk at every level (model_sample's
  // same_chunk), which compare levels on the same data: later rounds spread over
  // chunks, one level each, and text's ratio moves +-10% from one chunk to the next.
  double pair_ratio;
  double pair_cpu_ns_byte;  // the CPU per byte in those rounds
  bool pair_known;
};

// One measuring period's totals (see ChunkReport in policy.h).
struct PeriodMeasure {
  uint64_t app, wire, busy_ns, blocked_ns, cpu_ns;
  uint32_t promoted;  // chunks sent one level up (tx_stream's mix): not one level's figures
};

struct CostModel {
  uint8_t nlevels;
  LevelModel level[kMaxLevels];  // level[0] is "none": ratio 1, no CPU
  double wire_bps;     // link rate seen while the cap bound (wire bytes/s); 0: never bound
  // The byte cap's rate as of the sender's last write (policy_cap_rate; a live `bonsaictl
  // set` changes it): an upper bound on the link, which wire_bps is not after the cap
  // was raised. 0: no byte cap applies.
  double cap_bps;
  double send_ns_byte; // unblocked send path per wire byte (syscalls, copies, full socket)
  // Streams (wire v2) compress with history and pay a flush per write, which one-shot
  // calibration does not see: what the stream achieved at the current level over what
  // calibration predicted for it, applied to every compressing level. 1: none seen.
  double hist_gain;    // ratio achieved / ratio sampled
  double cpu_gain;     // CPU per byte spent / CPU per byte sampled
};

// The share of a period's time spent waiting for the bucket above which the cap binds.
inline constexpr double kBindingShare = 0.05;
// Where the cap's rate is known, a period that waited is link-bound only if its wire
// rate came within kLinkFull of the cap, or it waited kLinkWaitShare of its time or
// more (a cap shared with other connections or processes: each moves part of it and
// waits most of the time). A sender that other processes keep off the CPU waits a
// little after its stalls (the bucket refilled while it could not run: the link idled),
// so its periods wait 5-30% of their time at 55-80% of the cap: they say nothing about
// the link, and taken as link-bound they lowered the link's estimate (10 MiB/s to 7.0
// at a 10 MiB/s cap) and sent probes up from a CPU-bound level.
// why: see docs/notes/compression-measured.md#long-repeated-text-issue-53
inline constexpr double kLinkFull = 0.9;
inline constexpr double kLinkWaitShare = 0.5;

void model_init(CostModel& m, uint8_t nlevels) noexcept;

// A calibration sample: `app` bytes of one chunk compressed at `level` into `wire`
// bytes in `cpu_ns` (wire == app: the chunk does not compress). `same_chunk`: one of a
// round over every level on the same chunk.
void model_sample(CostModel& m, uint8_t level, uint64_t app, uint64_t wire, uint64_t cpu_ns,
                  bool same_chunk = false) noexcept;

// One measuring period at `level`: totals of its chunks. Updates the send cost and
// (if the bucket bound) the link rate. Levels are learnt from calibration samples
// only, so that all of them describe the same data; a period at a compressing level
// corrects them all by what the stream achieved (hist_gain, cpu_gain).
// `mixed`: some chunks ran one level up (tx_stream's mix): the stream's figures are not
// `level`'s, and the corrections are left as they were.
void model_observe(CostModel& m, uint8_t level, uint64_t app, uint64_t wire, uint64_t busy_ns,
                   uint64_t blocked_ns, uint64_t cpu_ns, bool mixed = false) noexcept;

// Whether a period that moved `wire` bytes in `busy_ns`, `blocked_ns` of them waiting,
// was bound by the link: it waited at least `share` of its time and, where the cap's
// rate is known, came within kLinkFull of it or waited kLinkWaitShare of its time.
bool model_link_bound(const CostModel& m, uint64_t wire, uint64_t busy_ns, uint64_t blocked_ns, double share) noexcept;

// Predicted application bytes/s at `level`: 1 / max(cpu + send/ratio, 1/(ratio*W))
// (compression overlaps the bucket's refill: the bucket is 10 ms deep). 0: unknown.
double model_rate(const CostModel& m, uint8_t level) noexcept;

// Whether model_rate(level) is limited by the CPU rather than the link (false: unknown).
// `hist_headroom`: as if the level's ratio were this many times the model's (the CPU
// must then feed the link that much more data).
bool model_cpu_bound(const CostModel& m, uint8_t level, double hist_headroom = 1.0) noexcept;

// Predicted application bytes/s `level` would have moved on the data of period `p`,
// measured at level `at`: the period's own ratio, CPU per byte and send cost, scaled
// to `level` by the two levels' ratio on the same calibration chunk (pair_ratio) and
// by `cpu_scale` (level's CPU per byte over at's), then model_rate's formula with the
// link's rate. Two periods differ by their data (text: +-10% from one 512 KiB to the
// next) more than two levels differ; on the same data they do not. 0: not known (a
// level without rounds, `none`, the link never bound).
double model_rate_on(const CostModel& m, const PeriodMeasure& p, uint8_t at, uint8_t level,
                     double cpu_scale) noexcept;
// The most `level` could have moved on the data of period `p`, measured at level `at`,
// with CPU to spare: the link's upper bound (the cap's rate, or the link measured
// binding if faster) times the period's ratio scaled to `level` by the two levels'
// ratio on the same calibration chunk. A level can never beat its link ceiling, however
// fast the CPU is at the moment. 0: not known (no byte cap: the link has no bound).
double model_link_ceiling_on(const CostModel& m, const PeriodMeasure& p, uint8_t at, uint8_t level) noexcept;
// `a`'s ratio over `b`'s on the same calibration chunk (pair_ratio). 0: not known.
double model_pair_gain(const CostModel& m, uint8_t a, uint8_t b) noexcept;
// `level`'s CPU per byte over `at`'s on the same calibration chunk. 0: not known.
double model_pair_cpu_scale(const CostModel& m, uint8_t at, uint8_t level) noexcept;

// The level with the highest predicted rate (ties: the cheaper level).
uint8_t model_best(const CostModel& m) noexcept;
// The same among levels `first` and above (unknown ones left out; none known: `first`).
uint8_t model_best_from(const CostModel& m, uint8_t first) noexcept;

}  // namespace bonsai::compress
