// SPDX-License-Identifier: MIT
// The period bookkeeping every policy's on_chunk shares (see policy_row.h).
#include "compress/policy_row.h"

namespace bonsai::compress {

bool policy_settling(PolicyState& s) noexcept {
  if (!s.settle) return false;
  s.settle = false;
  return true;
}

bool policy_period_add(PolicyState& s, const ChunkReport& r, uint64_t period_ns, uint32_t min_chunks,
                       double& rate) noexcept {
  s.acc_chunks += 1;
  s.acc_bytes += r.app_bytes;
  s.acc_wire += r.wire_bytes;
  s.acc_busy_ns += r.busy_ns;
  s.acc_blocked_ns += r.blocked_ns;
  s.acc_cpu_ns += r.cpu_ns;
  s.acc_promoted += r.promoted;
  if (s.acc_busy_ns < period_ns || s.acc_chunks < min_chunks) return false;
  rate = static_cast<double>(s.acc_bytes) * 1e9 / static_cast<double>(s.acc_busy_ns);
  return true;
}

void policy_period_end(PolicyState& s, uint8_t before) noexcept {
  s.settle = s.level != before;
  s.acc_chunks = 0;
  s.acc_bytes = s.acc_wire = s.acc_busy_ns = s.acc_blocked_ns = s.acc_cpu_ns = 0;
  s.acc_promoted = 0;
}

}  // namespace bonsai::compress
