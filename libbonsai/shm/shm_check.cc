// SPDX-License-Identifier: MIT
// Segment and limits validation (see shm_check.h).
#include "shm/shm_check.h"

#include "abi/limit_parse.h"

namespace bonsai {

const char* shm_header_problem(const ShmSegment& seg, size_t file_size) noexcept {
  if (file_size < sizeof(ShmHeader)) return "segment is truncated (smaller than its header)";
  const ShmHeader& h = seg.header;
  if (h.magic != kShmMagic) return "segment has a bad magic number (not a bonsai segment)";
  if (h.version != BONSAI_ABI_VERSION) return "segment has another layout version (bonsaictl and libbonsai differ)";
  if (h.size != sizeof(ShmSegment) || h.fingerprint != shm_layout_fingerprint() || h.max_slots != kMaxSlots)
    return "segment layout does not match this build (bonsaictl and libbonsai differ)";
  if (file_size < sizeof(ShmSegment)) return "segment is truncated";
  uint32_t scope = h.scope.load(std::memory_order_relaxed);
  if (scope != static_cast<uint32_t>(ShmScope::Process) && scope != static_cast<uint32_t>(ShmScope::Service))
    return "segment has an unknown scope";
  return nullptr;
}

const char* limits_problem(const LimitSet& set) noexcept {
  if (set.count > kMaxRules) return "more rules than the layout holds";
  constexpr CallMask kKnown = kCallCount == 64 ? ~CallMask{0} : (CallMask{1} << kCallCount) - 1;
  for (uint32_t r = 0; r < set.count; ++r) {
    const Rule& rule = set.rules[r];
    if (rule.calls == 0 || (rule.calls & ~kKnown)) return "a rule names unknown calls";
    if (rule.rate == 0 || rule.rate > kMaxRate) return "a rule has a rate out of range";
    if (rule.unit != RateUnit::Bytes && rule.unit != RateUnit::Calls) return "a rule has an unknown unit";
    if (rule.ceil > kMaxRate || rule.host1 > kMaxRules) return "a rule has a ceil out of range";
    if (rule.fd_mask == 0 || (rule.fd_mask & ~kAnyFd)) return "a rule has a bad fd kind";
    if (rule.unit == RateUnit::Bytes)
      for (size_t c = 0; c < kCallCount; ++c)
        if ((rule.calls & (CallMask{1} << c)) && !call_is_data(static_cast<CallId>(c)))
          return "a byte rate is set on a call that moves no data";
  }
  BucketTable table;
  if (!bucket_table_build(set, table, nullptr)) return "a call is in two rules";
  return nullptr;
}

void shm_header_init(ShmSegment& seg, ShmScope scope, unsigned uid, const char* service,
                     uint64_t now_unix_ns) noexcept {
  ShmHeader& h = seg.header;
  h.version = BONSAI_ABI_VERSION;
  h.max_slots = kMaxSlots;
  h.size = sizeof(ShmSegment);
  h.fingerprint = shm_layout_fingerprint();
  h.scope.store(static_cast<uint32_t>(scope), std::memory_order_relaxed);
  h.uid = uid;
  h.created_unix_ns = now_unix_ns;
  size_t i = 0;
  for (; service && service[i] && i + 1 < sizeof h.service; ++i) h.service[i] = service[i];
  h.service[i] = '\0';
  seg.limits.seq.store(2, std::memory_order_relaxed);
  seg.limits.changed_unix_ns.store(now_unix_ns, std::memory_order_relaxed);
  // The magic goes last: a reader that sees it sees a complete header.
  __atomic_store_n(&h.magic, kShmMagic, __ATOMIC_RELEASE);
}

}  // namespace bonsai
