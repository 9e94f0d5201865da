// SPDX-License-Identifier: MIT
// The datarate policy's cost model (see policy_model.h). Estimates are smoothed
// with an EWMA of weight 1/2: one odd period moves them half way, no further.
#include "compress/policy_model.h"

namespace bonsai::compress {
namespace {
double ewma(double old, double v, bool have) { return have ? 0.5 * old + 0.5 * v : v; }
double clamp(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }
// How far a stream may be from one-shot calibration (history gains; flush costs).
constexpr double kGainMin = 0.5, kGainMax = 8.0;
}  // namespace

void model_init(CostModel& m, uint8_t nlevels) noexcept {
  m = CostModel{};
  m.nlevels = nlevels ? (nlevels > kMaxLevels ? kMaxLevels : nlevels) : 1;
  m.level[0] = LevelModel{1.0, 0.0, true, 1.0, 0.0, true};
  m.hist_gain = m.cpu_gain = 1.0;
}

void model_sample(CostModel& m, uint8_t level, uint64_t app, uint64_t wire, uint64_t cpu_ns,
                  bool same_chunk) noexcept {
  if (level == 0 || level >= m.nlevels || app == 0) return;
  double ratio = wire && wire < app ? static_cast<double>(app) / static_cast<double>(wire) : 1.0;
  LevelModel& l = m.level[level];
  l.ratio = ewma(l.ratio, ratio, l.known);
  l.cpu_ns_byte = ewma(l.cpu_ns_byte, static_cast<double>(cpu_ns) / static_cast<double>(app), l.known);
  l.known = true;
  if (same_chunk) {
    l.pair_ratio = ewma(l.pair_ratio, ratio, l.pair_known);
    l.pair_cpu_ns_byte = ewma(l.pair_cpu_ns_byte, static_cast<double>(cpu_ns) / static_cast<double>(app), l.pair_known);
    l.pair_known = true;
  }
}

void model_observe(CostModel& m, uint8_t level, uint64_t app, uint64_t wire, uint64_t busy_ns,
                   uint64_t blocked_ns, uint64_t cpu_ns, bool mixed) noexcept {
  if (level >= m.nlevels || app == 0 || wire == 0 || busy_ns == 0) return;
  const LevelModel& l = m.level[level];
  if (level > 0 && !mixed && l.known && cpu_ns > 0 && l.cpu_ns_byte > 0) {  // a stream ran: correct the samples
    double ratio = static_cast<double>(app) / static_cast<double>(wire);
    double cpu = static_cast<double>(cpu_ns) / static_cast<double>(app);
    m.hist_gain = clamp(ewma(m.hist_gain, ratio / l.ratio, true), kGainMin, kGainMax);
    m.cpu_gain = clamp(ewma(m.cpu_gain, cpu / l.cpu_ns_byte, true), kGainMin, kGainMax);
  }
  uint64_t other = busy_ns > cpu_ns + blocked_ns ? busy_ns - cpu_ns - blocked_ns : 0;
  double send = static_cast<double>(other) / static_cast<double>(wire);
  m.send_ns_byte = ewma(m.send_ns_byte, send, m.send_ns_byte > 0);
  double wire_bps = static_cast<double>(wire) * 1e9 / static_cast<double>(busy_ns);
  if (model_link_bound(m, wire, busy_ns, blocked_ns, kBindingShare))
    m.wire_bps = ewma(m.wire_bps, wire_bps, m.wire_bps > 0);  // the cap binds: this is the link
  else if (m.wire_bps > 0 && wire_bps > m.wire_bps)
    m.wire_bps = wire_bps;  // the link is at least this fast
  // Never faster than the cap: a period's wire rate includes what the bucket's depth let
  // through at once. why: see docs/notes/compression-measured.md#the-policys-start-and-a-live-cap-change
  if (m.cap_bps > 0 && m.wire_bps > m.cap_bps) m.wire_bps = m.cap_bps;
}

bool model_link_bound(const CostModel& m, uint64_t wire, uint64_t busy_ns, uint64_t blocked_ns, double share) noexcept {
  if (busy_ns == 0) return false;
  double busy = static_cast<double>(busy_ns), blocked = static_cast<double>(blocked_ns);
  if (blocked < share * busy) return false;
  if (m.cap_bps <= 0) return true;  // no rate to compare with: the wait decides
  double wire_bps = static_cast<double>(wire) * 1e9 / busy;
  return wire_bps >= kLinkFull * m.cap_bps || blocked >= kLinkWaitShare * busy;
}

namespace {
// A known level's predicted time per application byte: CPU and send path (`work`) and
// the link's (0 while the link was never seen binding). false: not known.
bool level_times(const CostModel& m, uint8_t level, double& work, double& link) {
  if (level >= m.nlevels || !m.level[level].known) return false;
  const LevelModel& l = m.level[level];
  double ratio = level ? l.ratio * m.hist_gain : 1.0, cpu = level ? l.cpu_ns_byte * m.cpu_gain : 0.0;
  if (ratio < 1) ratio = 1;
  work = cpu + m.send_ns_byte / ratio;  // ns per application byte
  link = m.wire_bps > 0 ? 1e9 / (ratio * m.wire_bps) : 0;
  return true;
}
}  // namespace

double model_rate(const CostModel& m, uint8_t level) noexcept {
  double work = 0, link = 0;
  if (!level_times(m, level, work, link)) return 0;
  double t = link > work ? link : work;
  return t > 0 ? 1e9 / t : 1e18;
}

bool model_cpu_bound(const CostModel& m, uint8_t level, double hist_headroom) noexcept {
  double work = 0, link = 0;
  if (level == 0 || !level_times(m, level, work, link) || link <= 0) return false;
  // At a higher ratio the link takes each application byte in less time; the CPU's
  // share of `work` stays per application byte (the send path's shrinks too: ignored).
  return work > link / (hist_headroom > 1 ? hist_headroom : 1);
}

double model_rate_on(const CostModel& m, const PeriodMeasure& p, uint8_t at, uint8_t level,
                     double cpu_scale) noexcept {
  if (at == 0 || level == 0 || at >= m.nlevels || level >= m.nlevels || m.wire_bps <= 0 || cpu_scale <= 0) return 0;
  const LevelModel &a = m.level[at], &l = m.level[level];
  if (!a.pair_known || !l.pair_known || a.pair_ratio <= 0) return 0;
  if (p.app == 0 || p.wire == 0 || p.busy_ns == 0) return 0;
  double app = static_cast<double>(p.app), wire = static_cast<double>(p.wire);
  uint64_t other = p.busy_ns > p.cpu_ns + p.blocked_ns ? p.busy_ns - p.cpu_ns - p.blocked_ns : 0;
  double send = static_cast<double>(other) / wire;  // ns per wire byte
  double ratio = app / wire * l.pair_ratio / a.pair_ratio;
  if (ratio < 1) ratio = 1;
  double cpu = static_cast<double>(p.cpu_ns) / app * cpu_scale;
  double t = cpu + send / ratio, link = 1e9 / (ratio * m.wire_bps);
  if (link > t) t = link;
  return t > 0 ? 1e9 / t : 0;
}

double model_link_ceiling_on(const CostModel& m, const PeriodMeasure& p, uint8_t at, uint8_t level) noexcept {
  if (at >= m.nlevels || level >= m.nlevels || m.cap_bps <= 0 || p.app == 0 || p.wire == 0) return 0;
  double gain = model_pair_gain(m, level, at);
  if (gain <= 0) return 0;
  double ratio = static_cast<double>(p.app) / static_cast<double>(p.wire) * gain;
  double link = m.cap_bps > m.wire_bps ? m.cap_bps : m.wire_bps;
  return (ratio < 1 ? 1 : ratio) * link;
}

double model_pair_gain(const CostModel& m, uint8_t a, uint8_t b) noexcept {
  if (a >= m.nlevels || b >= m.nlevels || !m.level[a].pair_known || !m.level[b].pair_known) return 0;
  return m.level[b].pair_ratio > 0 ? m.level[a].pair_ratio / m.level[b].pair_ratio : 0;
}

double model_pair_cpu_scale(const CostModel& m, uint8_t at, uint8_t level) noexcept {
  if (at >= m.nlevels || level >= m.nlevels || !m.level[at].pair_known || !m.level[level].pair_known) return 0;
  double a = m.level[at].pair_cpu_ns_byte, l = m.level[level].pair_cpu_ns_byte;
  return a > 0 && l > 0 ? l / a : 0;
}

uint8_t model_best(const CostModel& m) noexcept { return model_best_from(m, 0); }

uint8_t model_best_from(const CostModel& m, uint8_t first) noexcept {
  uint8_t best = first;
  double best_rate = model_rate(m, first);
  for (uint8_t l = static_cast<uint8_t>(first + 1); l < m.nlevels; ++l) {
    double r = model_rate(m, l);
    if (r > best_rate) best_rate = r, best = l;
  }
  return best;
}

}  // namespace bonsai::compress
