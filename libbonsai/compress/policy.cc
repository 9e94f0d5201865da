// SPDX-License-Identifier: MIT
// Per-connection dispatch through the policy table (see policy.h); the period
// bookkeeping the policies share: policy_row.cc. The policies themselves: compress/policy_NAME.cc;
// parsing a policy's name: compress/grammar.cc.
#include "compress/policy.h"

namespace bonsai::compress {
namespace {

constexpr const PolicyOps* kOps[] = {
#define BONSAI_X(kind, name, takes_level) &k##kind##Ops,
    BONSAI_POLICIES(BONSAI_X)
#undef BONSAI_X
};
static_assert(sizeof kOps / sizeof kOps[0] == kPolicyCount);

const PolicyOps& ops_of(const PolicyState& s) { return *kOps[static_cast<size_t>(s.cfg.kind)]; }

}  // namespace

void policy_init(PolicyState& s, const PolicyConfig& cfg, uint8_t nlevels) noexcept {
  s = PolicyState{};
  s.cfg = cfg;
  datarate_init(s.dr, nlevels, 0);
  model_init(s.model, nlevels);
  queue_init(s.q, nlevels);
  s.level = 0;
  ops_of(s).init(s);
}

bool policy_wants_sample(const PolicyState& s, uint64_t now_ns) noexcept {
  const PolicyOps& ops = ops_of(s);
  return ops.wants_sample && ops.wants_sample(s, now_ns);
}

void policy_on_sample(PolicyState& s, uint8_t level, uint64_t app, uint64_t wire, uint64_t cpu_ns,
                      uint64_t now_ns, bool same_chunk) noexcept {
  model_sample(s.model, level, app, wire, cpu_ns, same_chunk);
  s.sampled = true;
  s.sampled_at_ns = now_ns;
  const PolicyOps& ops = ops_of(s);
  if (same_chunk && level + 1u == s.model.nlevels && ops.on_round) s.level = ops.on_round(s);
}

void policy_capped_start(PolicyState& s, double rate_bps) noexcept {
  if (s.cfg.kind != PolicyKind::Datarate || s.dr.warm || s.acc_chunks || s.level != 0) return;
  auto start = static_cast<uint8_t>(s.dr.nlevels / 2);
  s.level = start;
  s.dr.ccl = start;
  // A rate beyond any link (or NaN) is no information.
  if (rate_bps >= 1 && rate_bps < 1e12 && s.model.wire_bps == 0) s.model.wire_bps = rate_bps;
}

void policy_cap_rate(PolicyState& s, double rate_bps) noexcept {
  double rate = rate_bps >= 1 && rate_bps < 1e12 ? rate_bps : 0;  // NaN: none
  double was = s.model.cap_bps;
  s.model.cap_bps = rate;
  if (!s.cap_seen) {
    s.cap_seen = true;
    return;
  }
  bool changed = was == 0 || rate == 0 ? was != rate : rate > was * 1.01 || rate < was * 0.99;
  if (!changed || s.cfg.kind != PolicyKind::Datarate || !s.dr.warm) return;
  // The cap changed under a running sender (`bonsaictl set`): the link the model measured
  // and every back-off earned against it are stale. Start over as at the first period:
  // the cap's rate is the link until a period measures it, and the next period ends with
  // the model's pick. why: see docs/notes/compression-measured.md#the-policys-start-and-a-live-cap-change
  s.model.wire_bps = rate;
  datarate_restart(s.dr);
  s.acc_chunks = 0;
  s.acc_bytes = s.acc_wire = s.acc_busy_ns = s.acc_blocked_ns = s.acc_cpu_ns = 0;
  s.acc_promoted = 0;
  s.warm_skipped = 0;
  s.warm_waited = false;
  s.settle = true;  // the chunk in flight carries the old cap's debt
}

uint8_t policy_on_chunk(PolicyState& s, const ChunkReport& r) noexcept { return ops_of(s).on_chunk(s, r); }

}  // namespace bonsai::compress
