// SPDX-License-Identifier: MIT
// Calibration rounds for the datarate policy's model (see tx_calibrate.h): when a
// sender calibrates, what a round runs, and the long-distance matcher's switch, which
// follows the round's ratios.
#include "compress/tx_calibrate.h"

#include <cstring>

#include "compress/calibrator.h"
#include "compress/policy.h"
#include "compress/tx_loop_budget.h"

namespace bonsai::compress {
namespace {

// Calibration needs a chunk at least this large. Small chunks calibrate too (their
// one-shot ratio is low; the model corrects it by what the stream achieves).
constexpr size_t kSampleChunk = 2048;
constexpr uint64_t kIdleResampleNs = 4 * kResampleNs;

// Calibration for the datarate policy's model: compresses one chunk at every level
// (one-shot, on the process's shared calibrator: the connection's streams are not
// touched) and reports ratio and time. Skipped if another connection is calibrating.
// Every level really runs, incompressible-looking data included: a 4 KiB lz4 sample
// cannot tell what zstd gains on slightly compressible data. Each level runs twice,
// keeping the faster time: the first run after a change of level also pays zstd's
// table set-up, which a steady sender at that level does not (only where that set-up
// is a sizable share of the run: kOneRunNs).
// The stream's first round runs at once: the policy picks its level on it next. Later
// rounds (every kResampleNs, and when the data changed) are spread over the sender's
// next chunks, one run each, on a copy of the round's chunk kept in the calibrator, so
// every level still sees the same data (while another sender's round holds the copy, a
// round runs one level per chunk, both runs on that chunk:
// no one waits for the copy). All at once a round holds one chunk longer than a binding
// cap's bucket hides. why: see docs/notes/compression-measured.md#calibration-rounds
constexpr uint64_t kClaimLapseNs = 200'000'000;  // a spread round's owner that went quiet
// A level whose first run took at least this long is reported on it (in every round):
// zstd's table set-up for a 128 KiB chunk (~0.75 MiB of tables cleared, ~40 us) is
// under 4% of such a run, within the run-to-run noise, and a second run doubles what
// the round costs. Faster runs (lz4, zstd:1 and 3) still run twice.
// why: see docs/notes/compression-measured.md#calibration-rounds
constexpr uint64_t kOneRunNs = 1'000'000;

// Whether a spread round runs level `l`: every level until the policy has made its
// first pick (at the start, and again after a live change of the cap: datarate's
// model_best compares them all); after it, the policy's level and its two neighbours,
// the only levels Algorithm 1 moves to, probes and mixes with. The others' runs cost a
// sender at its CPU's limit link time. why: see docs/notes/compression-measured.md#calibration-rounds
// `top`: the highest level the sender's budget lets a chunk run at (a non-blocking
// sender's, compress/tx_loop_budget.h; else the last level): levels above it do not
// run, and the neighbours are those of the level the chunks run at.
bool round_runs(const TxStream& s, unsigned l, unsigned top) {
  const PolicyState& p = s.policy;
  if (l > top) return false;
  if (p.cfg.kind != PolicyKind::Datarate || !p.dr.warm) return true;
  unsigned at = p.level < top ? p.level : top;
  return l + 1 >= at && l <= at + 1u;
}
// The first level from `l` on that the round runs; 0: the round is over.
uint8_t round_next(const TxStream& s, unsigned l, unsigned top) {
  for (; l < s.levels->count; ++l)
    if (round_runs(s, l, top)) return static_cast<uint8_t>(l);
  return 0;
}

// One run of level l on src: its compressed size (len: did not compress) and time.
uint64_t run_level(TxStream& s, const IoOps& io, Calibrator* cal, uint8_t l, const void* src, size_t len,
                   uint64_t* ns) {
  uint64_t t0 = io.now_ns();
  size_t n = codec_compress(cal->codec, s.levels->levels[l], src, len, cal->out, kMaxFrameWire);
  *ns = io.now_ns() - t0;
  return n ? n : len;
}

// Both runs of level l on src at once (one if it took kOneRunNs), reported to the policy.
// @return the time reported.
// `once`: one run only (an event loop's first round: its time is the loop's).
uint64_t sample_now(TxStream& s, const IoOps& io, Calibrator* cal, uint8_t l, const void* src, size_t len,
                    bool same_chunk, bool once = false) {
  uint64_t a = 0, b = 0, wire = run_level(s, io, cal, l, src, len, &a);
  if (a < kOneRunNs && !once) run_level(s, io, cal, l, src, len, &b);
  uint64_t ns = b && b < a ? b : a;
  policy_on_sample(s.policy, l, len, wire, ns, io.now_ns(), same_chunk);
  return ns;
}

void calibrate(TxStream& s, const IoOps& io, const void* src, size_t len, double budget_ns) {
  Calibrator* cal = calibrator_try_acquire(*s.levels);
  if (!cal) return;
  uint8_t count = s.levels->count;
  uint64_t now = io.now_ns();
  if (!s.cal_paired) {  // the stream's first round: every level, now
    // A non-blocking sender's holds its thread about one chunk's budget: one run a
    // level, and no level starts once the round has taken the budget (the levels above
    // are dearer still; they are learnt by later rounds if the budget lets chunks run
    // there). At every level, twice, the first rounds of 40 connections opened at once
    // held an event loop's thread for a quarter of a second.
    uint64_t spent = 0;
    for (uint8_t l = 1; l < count; ++l) {
      if (budget_ns > 0 && static_cast<double>(spent) >= budget_ns) break;
      spent += sample_now(s, io, cal, l, src, len, true, budget_ns > 0);
    }
    s.cal_paired = true;
    s.cal_next = 0;
    calibrator_release();
    return;
  }
  // A non-blocking sender's rounds run the levels its chunks may run at, and the one
  // above while it is not known (the climb of loop_level_cap stops there until it is).
  unsigned top = count - 1u;
  if (budget_ns > 0) {
    top = loop_level_cap(s.policy.model, static_cast<uint8_t>(count - 1), len, budget_ns);
    if (top + 1 < count && !s.policy.model.level[top + 1].known) top += 1;
  }
  if (s.cal_next && !round_runs(s, s.cal_next, top)) {  // the budget shrank under a round
    s.cal_next = round_next(s, s.cal_next, top);
    s.cal_pass = 0;
    if (!s.cal_next) {  // nothing of it left to run: over
      if (s.cal_pair && cal->owner == &s) cal->owner = nullptr;
      s.cal_pair = false;
      calibrator_release();
      return;
    }
  }
  if (!s.cal_next) {  // a round starts: on a copy of this chunk if the calibrator has room
    s.cal_next = round_next(s, 1, top);
    if (!s.cal_next) {  // no level to run (a one-level list)
      calibrator_release();
      return;
    }
    s.cal_pass = 0;
    s.cal_pair = !cal->owner || cal->owner == &s || now >= cal->owner_at_ns + kClaimLapseNs;
    if (s.cal_pair) {
      std::memcpy(cal->chunk, src, len);
      cal->chunk_len = len;
      cal->owner = &s;
    }
  } else if (s.cal_pair && cal->owner != &s) {  // another sender took the copy over
    s.cal_pair = false;
    s.cal_pass = 0;
  }
  uint8_t l = s.cal_next;
  bool done = true;
  if (s.cal_pair) {  // one run per chunk on the copy
    cal->owner_at_ns = now;
    uint64_t ns = 0, wire = run_level(s, io, cal, l, cal->chunk, cal->chunk_len, &ns);
    if (s.cal_pass == 0 && ns < kOneRunNs) {
      s.cal_pass = 1;
      s.cal_first_ns = ns;
      done = false;
    } else {
      bool again = s.cal_pass == 1;
      policy_on_sample(s.policy, l, cal->chunk_len, wire, again && s.cal_first_ns < ns ? s.cal_first_ns : ns,
                       io.now_ns(), true);
      s.cal_pass = 0;
    }
  } else {  // the copy is another sender's: both runs on this chunk, one level per chunk
    sample_now(s, io, cal, l, src, len, false);
  }
  if (done) s.cal_next = round_next(s, l + 1u, top);
  if (!s.cal_next && s.cal_pair) {  // complete: the copy is free
    cal->owner = nullptr;
    s.cal_pair = false;
  }
  calibrator_release();
}

// Long-distance matching (codec.h) where the data barely compresses: the best level
// saves less than kLdmOnBelow on a calibration chunk. There zstd's tables find little;
// the repeats LDM finds far back are what can be gained. Off again above kLdmOffAbove,
// where LDM costs speed for next to no ratio. Each switch starts a new zstd frame, so
// the two thresholds are apart. why: see docs/notes/compression-measured.md#long-distance-matching
constexpr double kLdmOnBelow = 1.3;
constexpr double kLdmOffAbove = 1.6;
void choose_long_matches(TxStream& s) {
  const CostModel& m = s.policy.model;
  double best = 0;
  for (uint8_t l = 1; l < m.nlevels && l < kMaxLevels; ++l)
    if (m.level[l].known && m.level[l].ratio > best) best = m.level[l].ratio;
  if (best <= 0) return;
  if (best < kLdmOnBelow) stream_long_matches(s.codec, true);
  else if (best > kLdmOffAbove) stream_long_matches(s.codec, false);
}

}  // namespace

void tx_calibrate(TxStream& s, const IoOps& io, const void* src, size_t len, double budget_ns) noexcept {
  calibrate(s, io, src, len, budget_ns);
  choose_long_matches(s);
}

// Whether this chunk calibrates (a round in progress, or the policy asks for one).
// Unbound (CPU-bound, at `none` or at a level), the model only has to keep showing
// that dearer levels are slower: a round every kIdleResample is enough (a round costs a
// CPU-bound sender its time: see docs/notes/compression-measured.md#calibration-rounds).
// At a binding cap a spread round runs only while the sender is more than kAheadShare
// of the bucket's depth ahead of the link (`lead`, in depths; -1: no bucket to read,
// then after a chunk that waited): that lead hides one run and the chunk's own
// compression; once it is spent, back-to-back runs of the dear levels leave the link
// idle. (A chunk's measured wait alone is no test: the meter's own
// clock reads count in it, so nearly every chunk "waited".)
bool tx_wants_calibration(const TxStream& s, size_t len, uint64_t now_ns, double lead) noexcept {
  if (len < kSampleChunk) return false;
  if (s.cal_paired && tx_cap_binds(s) && !(lead >= 0 ? lead > kAheadShare : s.last_waited)) return false;
  if (s.cal_next) return true;
  if (s.policy.sampled && !tx_cap_binds(s) && now_ns - s.policy.sampled_at_ns < kIdleResampleNs)
    return false;
  return policy_wants_sample(s.policy, now_ns);
}

}  // namespace bonsai::compress
