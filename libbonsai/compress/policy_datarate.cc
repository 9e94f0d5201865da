// SPDX-License-Identifier: MIT
// Hovestadt et al. Algorithm 1 (see policy_datarate.h). Numbers in comments refer
// to the lines of the paper's listing; docs/reference/compression.md lists the deviations. At the
// end, the `datarate` row of the policy table (compress/policy.h).
#include "compress/policy_datarate.h"

#include <cmath>

#include "compress/codec_params.h"
#include "compress/policy_row.h"

namespace bonsai::compress {

void datarate_init(DatarateState& s, uint8_t nlevels, uint8_t start) noexcept {
  s = DatarateState{};
  s.nlevels = nlevels ? nlevels : 1;
  s.ccl = start < s.nlevels ? start : 0;
  s.inc = true;
  s.probe_from = -1;
  s.reach_wait = kReachWaitFirst;
}

void datarate_levels(DatarateState& s, const LevelList& levels) noexcept {
  s.fresh = 0;
  s.reach = 0;
  for (unsigned i = 0; i < levels.count && i < 8; ++i)  // a change of zstd level starts a new zstd frame
    if (levels.levels[i].method == Method::Zstd) s.fresh |= static_cast<uint8_t>(1u << i);
  for (unsigned i = 2; i < levels.count && i < kMaxLevels; ++i)  // with a compressing level below it
    if (levels.levels[i].method == Method::Zstd && zstd_level_reaches_window(levels.levels[i].param)) {
      s.reach = static_cast<uint8_t>(i);
      // A quarter of the window: repeats further back come round within the brief period
      // that follows, and their matches compress ~10x faster than new text, which shows.
      s.reach_fill = uint64_t{1} << (kZstdWindowLog - 2);
      break;
    }
}

namespace {
// The neighbour in direction `up`, turning round at either end.
int step(const DatarateState& s, bool up) {
  int l = s.ccl + (up ? 1 : -1);
  if (l >= s.nlevels) l = s.nlevels >= 2 ? s.nlevels - 2 : 0;
  if (l < 0) l = s.nlevels >= 2 ? 1 : 0;
  return l;
}
// Within the tie margin: the level the model predicts better by kTieMargin/2, if it
// is trusted at both (measured at >= kModelTrust of its prediction); -1: no opinion.
int model_tie_break(const CostModel& m, int a, double ra, int b, double rb) {
  double pa = model_rate(m, static_cast<uint8_t>(a)), pb = model_rate(m, static_cast<uint8_t>(b));
  if (pa == 0 || pb == 0 || ra < kModelTrust * pa || rb < kModelTrust * pb) return -1;
  if (pa > pb * (1 + kTieMargin / 2)) return a;
  if (pb > pa * (1 + kTieMargin / 2)) return b;
  return -1;
}
// Whether `to`, a cheaper level, is ruled out by its link ceiling: what it could move on
// the period's data with CPU to spare (the link's rate times its ratio there) is not
// kCeilingMargin above what the current level moved (`cdr`). A link-bound level never
// beats its ceiling, and moves a little below it (headers, the bucket's wake-ups); a
// CPU-bound level's rate reads low in a period another process took CPU from, or whose
// data compressed slowly, and a move to the cheaper level on such a period loses.
// why: see docs/notes/compression-measured.md#the-datarate-policys-decisions
bool below_ceiling(const DatarateState& s, const CostModel& m, int to, double cdr) {
  if (to >= s.ccl || cdr <= 0) return false;
  double ceiling = model_link_ceiling_on(m, s.period, s.ccl, static_cast<uint8_t>(to));
  return ceiling > 0 && ceiling < cdr * (1 + kCeilingMargin);
}
// While a level's back-off is short, the model may veto a probe: upward if it
// predicts a loss beyond the tie margin (the model's CPU figures carry the load of the
// moment), downward if it predicts a clear one. Longer back-offs probe regardless, so a
// wrong model cannot hide the best level for ever.
// why: see docs/notes/compression-measured.md#the-datarate-policys-decisions
bool worth_probing(const DatarateState& s, const CostModel& m, int to, double cdr) {
  // The level above, measured on the mix's chunks (not the model: what it took in the
  // last second), cannot compress what the current level moves: its probe could only
  // lose, and the mix already spends on it the CPU the link leaves.
  if (to == s.ccl + 1 && s.up_cpu_rate > 0 && s.up_cpu_rate < cdr * (1 + kTieMargin)) return false;
  if (s.bck[s.ccl] >= kGateBackoff) return true;
  if (below_ceiling(s, m, to, cdr)) return false;
  // While the link binds, the ratios on the same calibration chunk speak (0: unknown).
  double gain = s.bound ? model_pair_gain(m, s.ccl, static_cast<uint8_t>(to)) : 0;
  double edge = 1 + kTieMargin / 2;
  // Between two levels whose change starts a new zstd frame (the history is lost) and
  // whose ratios are within half the tie margin: the probe could only measure the lost
  // history and the data's noise.
  if (gain > 0 && datarate_new_frame(s, s.ccl, to) && gain < edge && gain * edge > 1) return false;
  // With CPU to spare, a cheaper level can only lose when its ratio is lower by half the
  // tie margin or more.
  if (to < s.ccl && gain >= edge) return false;
  // Waiting for the bucket with CPU to spare, a dearer level is worth a probe: the
  // model's CPU figure for a level the stream has not run is a one-shot sample times
  // the current level's correction (it may put a link-bound level CPU-bound), and a
  // probe that turns CPU-bound is reverted.
  if (to > s.ccl && s.bound) return true;
  double here = model_rate(m, s.ccl), there = model_rate(m, static_cast<uint8_t>(to));
  if (here == 0 || there == 0) return true;  // unknown: Algorithm 1 as is
  if (cdr < kModelTrust * here) return true;  // the model is wrong about this level
  return to > s.ccl ? there >= here * (1 - kTieMargin) : there >= here * (1 - kDownGate);
}
// How much more the current level moves than `from`, on the data of the period before
// the probe (run at `from`) and of the probe's (run at the current level): the
// geometric mean of the two periods' predictions, with the CPU of one level over the
// other scaled by `k`. 0: not known.
double same_data_gain(const DatarateState& s, const CostModel& m, int from, double k) {
  auto f = static_cast<uint8_t>(from);
  if (k <= 0) return 0;
  double before_here = model_rate_on(m, s.before_period, f, s.ccl, k);
  double before_there = model_rate_on(m, s.before_period, f, f, 1);
  double after_here = model_rate_on(m, s.period, s.ccl, s.ccl, 1);
  double after_there = model_rate_on(m, s.period, s.ccl, f, 1 / k);
  if (before_here <= 0 || before_there <= 0 || after_here <= 0 || after_there <= 0) return 0;
  return std::sqrt(before_here / before_there * (after_here / after_there));
}
// Whether the two periods of a probe compressed so differently (their ratios' quotient
// kHistoryShift beyond the calibration chunk's for the two levels) that what one level
// finds in the stream's history (repeats MiBs back) and the other does not decides:
// the model, which scales one period's ratio to the other level by calibration, would
// erase it. 0 wire or app: no.
bool history_shift(const DatarateState& s, const CostModel& m, int from) {
  const PeriodMeasure &a = s.before_period, &b = s.period;
  double pair = model_pair_gain(m, s.ccl, static_cast<uint8_t>(from));
  if (pair <= 0 || a.app == 0 || a.wire == 0 || b.app == 0 || b.wire == 0) return false;
  double measured = static_cast<double>(b.app) / static_cast<double>(b.wire) /
                    (static_cast<double>(a.app) / static_cast<double>(a.wire));
  return measured > pair * kHistoryShift || measured * kHistoryShift < pair;
}
// The same-data verdict: > 1 the current level, < 1 `from`, 0 none. It must hold both
// with the calibration chunk's CPU ratio between the two levels and with the one the two
// periods measured (other data, but the stream's real cost): one-shot calibration
// overstates a dearer zstd level's CPU, and CPU per byte moves with the data. Where the
// two disagree, the rates decide. why: see docs/notes/compression-measured.md#the-datarate-policys-decisions
double same_data_verdict(const DatarateState& s, const CostModel& m, int from) {
  const PeriodMeasure &a = s.before_period, &b = s.period;
  if (a.app == 0 || b.app == 0 || a.cpu_ns == 0 || b.cpu_ns == 0) return 0;
  if (a.promoted || b.promoted) return 0;  // a mix of two levels: the rates speak
  if (history_shift(s, m, from)) return 0;
  double measured = static_cast<double>(b.cpu_ns) / static_cast<double>(b.app) /
                    (static_cast<double>(a.cpu_ns) / static_cast<double>(a.app));
  double calibrated = model_pair_cpu_scale(m, static_cast<uint8_t>(from), s.ccl);
  double g1 = same_data_gain(s, m, from, calibrated);
  double g2 = same_data_gain(s, m, from, measured);
  double edge = 1 + kTieMargin / 2;
  if (g1 >= edge && g2 >= edge) return g1 < g2 ? g1 : g2;
  if (g1 > 0 && g2 > 0 && g1 * edge <= 1 && g2 * edge <= 1) return g1 > g2 ? g1 : g2;
  return 0;
}
// The model's pick from the current level: after the first calibration round (`cdr`
// 0), or at the end of the first period, which moved `cdr`.
int model_pick(const DatarateState& s, const CostModel& m, double cdr) {
  int best = model_best(m);
  // Started compressing under a cap that did not bind (CPU-bound at the middle
  // level): the link is unknown and `none` would look infinitely fast. The cap is
  // there: the best compressing level, and Algorithm 1 probes `none` later.
  if (best == 0 && s.ccl != 0 && m.wire_bps == 0) best = model_best_from(m, 1);
  // A pick the model cannot tell from the start level (within half the tie margin)
  // is no pick: data whose gain is the stream's history samples alike at every zstd
  // level one-shot.
  double here = model_rate(m, s.ccl);
  if (best != s.ccl && here > 0 && model_rate(m, static_cast<uint8_t>(best)) < here * (1 + kTieMargin / 2))
    best = s.ccl;
  // A pick the model itself puts CPU-bound yields to the cheaper neighbour predicted
  // within kCpuPickMargin: the model errs upwards on CPU (one-shot calibration runs
  // zstd's small-input parameters), and with the stream's history to come
  // (kPickHistGain) a pick link-bound on the sample runs CPU-bound in the stream.
  // why: see docs/notes/compression-measured.md#the-datarate-policys-decisions
  double headroom = m.hist_gain > 0 && m.hist_gain < kPickHistGain ? kPickHistGain / m.hist_gain : 1.0;
  double floor = model_rate(m, static_cast<uint8_t>(best)) * (1 - kCpuPickMargin);
  while (best > 1 && model_cpu_bound(m, static_cast<uint8_t>(best), headroom) &&
         model_rate(m, static_cast<uint8_t>(best - 1)) >= floor)
    best -= 1;
  if (below_ceiling(s, m, best, cdr)) best = s.ccl;
  return best;
}
void reward(DatarateState& s, int level) {
  if (s.bck[level] < kMaxBackoff) s.bck[level] += 1;
}
// Moves to `to`, remembering where from and at what rate, so the next period can
// judge the move.
void move(DatarateState& s, int to, double rate) {
  s.probe_from = static_cast<int8_t>(s.ccl);
  s.before = rate;
  s.before_period = s.period;
  s.inc = to > s.ccl;
  s.ccl = static_cast<uint8_t>(to);
  s.c = 0;
}
}  // namespace

void datarate_restart(DatarateState& s) noexcept {
  uint8_t level = s.ccl, fresh = s.fresh, reach = s.reach;
  uint64_t fill = s.reach_fill;
  datarate_init(s, s.nlevels, level);
  s.fresh = fresh;
  s.reach = reach;
  s.reach_fill = fill;
}

uint8_t datarate_round_pick(DatarateState& s, const CostModel& m) noexcept {
  if (!s.warm && m.wire_bps > 0) s.ccl = static_cast<uint8_t>(model_pick(s, m, 0));
  return s.ccl;
}

uint8_t datarate_next(DatarateState& s, double cdr, double alpha, const CostModel& m) noexcept {
  if (!s.warm) {  // first period: measured at the start level; the model picks the level
    s.warm = true;
    s.pdr = cdr;
    int best = model_pick(s, m, cdr);
    if (best != s.ccl) move(s, best, cdr), s.first_pick = true;
    // The model assumes compression hides behind the bucket's refill, so it errs
    // upwards: the first probe after its pick goes to the cheaper neighbour.
    s.inc = false;
    return s.ccl;
  }
  s.c += 1;  // 2
  if (s.probe_from >= 0) {  // the period after a change: keep it or revert it
    int from = s.probe_from;
    s.probe_from = -1;
    bool first = s.first_pick;
    s.first_pick = false;
    if (s.reach_probe) {  // judged by the rates alone (see DatarateState::reach)
      s.reach_probe = false;
      if (cdr >= s.before * (1 + kTieMargin)) {
        reward(s, s.ccl);
        s.reach_wait = kReachWaitFirst;
        s.pdr = cdr;
      } else {
        s.inc = from > s.ccl;
        s.ccl = static_cast<uint8_t>(from);
        unsigned next = s.reach_wait * kReachWaitGrowth;
        s.reach_wait = static_cast<uint16_t>(next > kReachWaitMax ? kReachWaitMax : next);
        s.pdr = s.before;
      }
      s.c = 0;
      return s.ccl;
    }
    // Ties go to the cheaper level: a dearer level must earn its CPU. Unless the model,
    // trusted at both levels, predicts one of them better: at a binding cap it compares
    // the levels' ratios on the same calibration chunk, which a short probe (noise, and
    // a new zstd frame without history) cannot resolve within the margin.
    double keep_at = s.before * (s.ccl > from ? 1 + kTieMargin : 1 - kTieMargin);
    double zone = kTieMargin + (datarate_new_frame(s, s.ccl, from) ? kFreshMargin : 0);
    bool mixed = s.period.promoted || s.before_period.promoted;
    if (!mixed && cdr < s.before * (1 + kTieMargin) && cdr >= s.before * (1 - zone)) {
      int pick = model_tie_break(m, s.ccl, cdr, from, s.before);
      if (pick >= 0) keep_at = pick == s.ccl ? 0 : 1e300;
    }
    // The model's first pick, when the first period ran at `none` (an uncapped start)
    // and the pick compresses: kept unless it loses more than alpha, as the paper keeps
    // a stable level (its first 50 ms start a new stream without history, and `none`'s
    // first period may still carry some of the bucket's depth).
    if (first && from == 0 && cdr >= s.before * (1 - alpha)) keep_at = 0;
    // On the same data, by the model: each period's verdict of the level it did not
    // run against the one it ran, averaged. Where the link bound at both levels this
    // compares their ratios on the same calibration chunk; where one level is CPU-bound,
    // also their CPU per byte on that chunk. Within half the tie margin it has no opinion
    // (data whose gain is the stream's history samples alike: the rates show it).
    double verdict = same_data_verdict(s, m, from);
    if (verdict > 1) keep_at = 0;
    else if (verdict > 0) keep_at = 1e300;
    if (cdr >= keep_at) {  // 15: improved
      reward(s, s.ccl);
      s.c = 0;
      s.pdr = cdr;
    } else {  // 19: dropped: revert at once; the level left earns a longer back-off
      s.bck[s.ccl] = 0;
      s.inc = from > s.ccl;
      s.ccl = static_cast<uint8_t>(from);
      reward(s, from);
      s.c = 0;
      s.pdr = s.before;
    }
    return s.ccl;
  }
  // From a compressing level only: a stream at `none` is there because nothing beats the
  // link (uncapped: memcpy) or the data does not compress; Algorithm 1's probes see to it.
  if (s.ccl > 0 && s.ccl < s.reach && ++s.reach_c >= s.reach_wait) {  // probe the level with the window's reach
    s.reach_c = 0;
    move(s, s.reach, cdr);
    s.reach_probe = true;
    s.fill_left = s.reach_fill;
    s.fill_ns = 0;
    return s.ccl;
  }
  double d = cdr - s.pdr;  // 1
  double tol = alpha * s.pdr;
  if (d <= tol && -d <= tol) {  // 4: stable
    if (s.c >= (1u << s.bck[s.ccl])) {  // 6: back-off over: probe a neighbour
      int n = step(s, s.inc);
      bool worth = n != s.ccl && worth_probing(s, m, n, cdr);
      if (!worth) {  // ruled out without a probe: the other neighbour now, not a back-off later
        int o = step(s, !s.inc);
        if (o != s.ccl && o != n && worth_probing(s, m, o, cdr)) n = o, worth = true;
      }
      if (worth) {
        move(s, n, cdr);
      } else {  // the model rules the neighbour out: count it as a failed probe
        reward(s, s.ccl);
        s.inc = !s.inc;
        s.c = 0;
      }
    }
  } else if (d > 0) {  // 15: improved (conditions changed, not the level)
    reward(s, s.ccl);
    s.c = 0;
  } else {  // 19: dropped without a change of ours (the data or the link changed): nothing
    s.bck[s.ccl] = 0;  // to revert; probe again soon, with a fresh model (policy.cc resamples)
    s.c = 0;
    s.dropped = true;
    s.reach_wait = kReachWaitFirst;  // new data may repeat where the old did not
  }
  s.pdr = cdr;
  return s.ccl;
}


// ---- the policy table's row (compress/policy.h) ----
namespace {
// The first chunk spends the bucket's initial depth: not measured.
void datarate_policy_init(PolicyState& s) noexcept { s.settle = true; }

uint8_t datarate_on_chunk(PolicyState& s, const ChunkReport& r) noexcept {
  if (policy_settling(s)) return s.level;
  // The first period measures the link: chunks that did not wait spend the bucket's
  // initial depth (10 ms of rate) and would overstate it, and so does the first that
  // waited (it waits for part of one chunk's debt only).
  // why: see docs/notes/compression-measured.md#the-datarate-policys-decisions
  if (!s.dr.warm && !s.warm_waited && s.warm_skipped < kWarmSkipMax) {
    ++s.warm_skipped;
    s.warm_waited = r.blocked_ns > 0;
    return s.level;
  }
  // The first period and the period after a change (a probe) are short (period/4).
  // A whole first period at the middle level costs a capped run its start; the link it
  // reads a little high (the bucket's depth) does not decide probes, which are judged
  // on the same data.
  bool brief = !s.dr.warm || s.dr.probe_from >= 0;
  // A reach probe's new zstd frame takes in the window's worth of the stream first (the
  // repeats it can find come round after it), unmeasured, for at most half a period.
  if (s.dr.reach_probe && s.dr.fill_left > 0 && s.dr.fill_ns < s.cfg.period_ns / 2) {
    s.dr.fill_left -= r.app_bytes < s.dr.fill_left ? r.app_bytes : s.dr.fill_left;
    s.dr.fill_ns += r.busy_ns;
    return s.level;
  }
  double rate;
  if (!policy_period_add(s, r, brief ? s.cfg.period_ns / 4 : s.cfg.period_ns, brief ? kWarmChunks : 0, rate))
    return s.level;
  uint8_t before = s.level;
  model_observe(s.model, s.level, s.acc_bytes, s.acc_wire, s.acc_busy_ns, s.acc_blocked_ns, s.acc_cpu_ns,
                s.acc_promoted > 0);
  s.dr.bound = model_link_bound(s.model, s.acc_wire, s.acc_busy_ns, s.acc_blocked_ns, kHeadroomShare);
  s.dr.period = PeriodMeasure{s.acc_bytes, s.acc_wire, s.acc_busy_ns, s.acc_blocked_ns, s.acc_cpu_ns, s.acc_promoted};
  s.level = datarate_next(s.dr, rate, s.cfg.alpha, s.model);
  if (s.dr.dropped) s.sampled = false, s.dr.dropped = false;  // calibrate on the new data
  policy_period_end(s, before);
  return s.level;
}

// Before the first period has measured anything, with the cap's rate as the link.
uint8_t datarate_on_round(PolicyState& s) noexcept {
  if (s.acc_chunks == 0) s.level = datarate_round_pick(s.dr, s.model);
  return s.level;
}

// At the start and every kResampleNs.
bool datarate_wants_sample(const PolicyState& s, uint64_t now_ns) noexcept {
  return !s.sampled || now_ns - s.sampled_at_ns >= kResampleNs;
}
}  // namespace

extern const PolicyOps kDatarateOps{datarate_policy_init, datarate_on_chunk, datarate_wants_sample,
                                    datarate_on_round};

}  // namespace bonsai::compress
