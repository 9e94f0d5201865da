// SPDX-License-Identifier: MIT
// Segment and limits validation (see shm_check.h).
#include "shm/shm_check.h"

#include "abi/limit_parse.h"
#include "sys/word_copy.h"

namespace bonsai {

const char kShmNewerLayout[] = "segment was made by a newer bonsai";

namespace {

// What both kinds of segment share: a header's version, size and fingerprint against the
// frozen base, and from layout 15 the directory right after the base.
const char* layout_problem(const unsigned char* seg, uint32_t version, uint64_t span, uint64_t fingerprint,
                           uint64_t base_size, uint64_t base_fp, size_t file_size, size_t mapped,
                           ShmSections* out) noexcept {
  if (out) out->count = 0, out->damage = nullptr;
  if (version < kShmOldestLayout)
    return "segment was made by a bonsai older than 0.2.0 (a layout no release reads): remove it and load the "
           "service again";
  if (version == kShmOldestLayout) {  // 0.2.0: the base alone
    if (span != base_size || fingerprint != base_fp) return "segment layout does not match this build (bonsaictl and libbonsai differ)";
    if (file_size < base_size || mapped < base_size) return "segment is truncated";
    return nullptr;
  }
  // Layout 15 on: the base, then the directory. A layout newer than ours is readable if its
  // directory says so; without a directory we can place, it is newer than we know.
  const uint64_t dir_end = base_size + sizeof(ShmSectionDir);
  if (file_size < dir_end || mapped < dir_end)
    return version > BONSAI_ABI_VERSION ? kShmNewerLayout : "segment is truncated (no section directory)";
  ShmSectionDir dir{};
  words_load(&dir, seg + base_size, sizeof dir);  // a copy: the service's user may rewrite it meanwhile
  if (fingerprint != base_fp) return "segment layout does not match this build (bonsaictl and libbonsai differ)";
  // A layout this build knows needs nothing of the directory to use the base, which holds
  // everything layout 14 had: a directory damaged by the service's user (a tenant can
  // write it) costs that service its later sections only, never its caps or its counters.
  const bool known = version <= BONSAI_ABI_VERSION;
  const char* damage = nullptr;
  if (dir.magic != kShmDirMagic) {
    if (!known) return kShmNewerLayout;
    damage = "bad magic";
  } else if (dir.oldest_reader > BONSAI_ABI_VERSION) {
    return kShmNewerLayout;
  } else if (dir.oldest_reader < 15 || dir.oldest_reader > version) {
    damage = "its oldest reader";
  }
  if (!damage && (span < dir_end || span > file_size || span > mapped || span > kShmSpanMax)) {
    if (!known) return "segment is truncated or its size is damaged";
    damage = "the segment's size";
  }
  if (!damage && dir.count > kShmMaxSections) damage = "too many sections";
  for (uint32_t i = 0; !damage && i < dir.count; ++i) {
    const ShmSectionEntry& e = dir.entries[i];
    if (e.id == 0 || e.size == 0 || e.offset % 64 || e.offset < dir_end || e.offset > span || e.size > span - e.offset)
      damage = "a section out of bounds";
    for (uint32_t j = 0; !damage && j < i; ++j) {
      const ShmSectionEntry& f = dir.entries[j];
      if (f.id == e.id || (e.offset < f.offset + f.size && f.offset < e.offset + e.size)) damage = "sections overlap";
    }
  }
  if (damage) {
    if (!known) return "segment has a damaged section directory";
    if (out) out->damage = damage;  // the base alone: said by bonsaictl, no section used
    return nullptr;
  }
  if (out) {
    out->count = dir.count;
    for (uint32_t i = 0; i < dir.count; ++i) out->entries[i] = dir.entries[i];
  }
  return nullptr;
}

void dir_init(unsigned char* seg, uint64_t base_size) noexcept {
  auto* dir = reinterpret_cast<ShmSectionDir*>(seg + base_size);
  dir->oldest_reader = 15;
  dir->count = 0;
  dir->magic = kShmDirMagic;
}

}  // namespace

const char* shm_header_problem(const ShmSegment& seg, size_t file_size, size_t mapped, ShmSections* sections) noexcept {
  if (sections) sections->count = 0, sections->damage = nullptr;
  if (file_size < sizeof(ShmHeader) || mapped < sizeof(ShmHeader)) return "segment is truncated (smaller than its header)";
  const ShmHeader& h = seg.header;
  if (h.magic != kShmMagic) return "segment has a bad magic number (not a bonsai segment)";
  uint32_t version = __atomic_load_n(&h.version, __ATOMIC_RELAXED);
  if (const char* p = layout_problem(reinterpret_cast<const unsigned char*>(&seg), version,
                                     __atomic_load_n(&h.size, __ATOMIC_RELAXED),
                                     __atomic_load_n(&h.fingerprint, __ATOMIC_RELAXED), kShmBaseSize,
                                     kShmBaseFingerprint, file_size, mapped, sections))
    return p;
  if (h.max_slots != kMaxSlots) return "segment layout does not match this build (bonsaictl and libbonsai differ)";
  uint32_t scope = h.scope.load(std::memory_order_relaxed);
  if (scope != static_cast<uint32_t>(ShmScope::Process) && scope != static_cast<uint32_t>(ShmScope::Service))
    return "segment has an unknown scope";
  return nullptr;
}

const char* host_header_problem(const ShmHost& host, size_t file_size, size_t mapped, ShmSections* sections) noexcept {
  if (sections) sections->count = 0, sections->damage = nullptr;
  if (file_size < sizeof(ShmHostHeader) || mapped < sizeof(ShmHostHeader)) return "is truncated";
  const ShmHostHeader& h = host.header;
  if (h.magic != kHostMagic) return "is not a bonsai host segment";
  return layout_problem(reinterpret_cast<const unsigned char*>(&host), __atomic_load_n(&h.version, __ATOMIC_RELAXED),
                        __atomic_load_n(&h.size, __ATOMIC_RELAXED), __atomic_load_n(&h.fingerprint, __ATOMIC_RELAXED),
                        kHostBaseSize, kHostBaseFingerprint, file_size, mapped, sections);
}

size_t shm_map_size(size_t file_size, size_t base_size) noexcept {
  size_t n = file_size < kShmSpanMax ? file_size : static_cast<size_t>(kShmSpanMax);
  return n < base_size ? base_size : n;
}

uint64_t shm_section_offset(const ShmSections& sections, ShmSectionId id, uint64_t size) noexcept {
  uint32_t n = sections.count < kShmMaxSections ? sections.count : kShmMaxSections;
  for (uint32_t i = 0; i < n; ++i)
    if (sections.entries[i].id == static_cast<uint32_t>(id)) return sections.entries[i].size == size ? sections.entries[i].offset : 0;
  return 0;
}

const char* limits_problem(const LimitSet& set) noexcept {
  if (set.count > kMaxRules) return "more rules than the layout holds";
  constexpr CallMask kKnown = kCallCount == 64 ? ~CallMask{0} : (CallMask{1} << kCallCount) - 1;
  for (uint32_t r = 0; r < set.count; ++r) {
    const Rule& rule = set.rules[r];
    if (rule.calls == 0 || (rule.calls & ~kKnown)) return "a rule names unknown calls";
    if (rule.rate == 0 || rule.rate > kMaxRate || rule.rate_less_micro >= kRateMicro ||
        rule_rate_micro(rule) < kMinRateMicro)
      return "a rule has a rate out of range";
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

void shm_header_init(ShmSegment& seg, size_t mapped, ShmScope scope, unsigned uid, const char* service,
                     uint64_t now_unix_ns) noexcept {
  ShmHeader& h = seg.header;
  const bool dir = mapped >= kShmMadeSize;
  if (dir) dir_init(reinterpret_cast<unsigned char*>(&seg), kShmBaseSize);
  h.version = dir ? BONSAI_ABI_VERSION : kShmOldestLayout;
  h.max_slots = kMaxSlots;
  h.size = dir ? kShmMadeSize : kShmBaseSize;
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

void host_header_init(ShmHost& host, size_t mapped, unsigned uid) noexcept {
  ShmHostHeader& h = host.header;
  const bool dir = mapped >= kHostMadeSize;
  if (dir) dir_init(reinterpret_cast<unsigned char*>(&host), kHostBaseSize);
  h.version = dir ? BONSAI_ABI_VERSION : kShmOldestLayout;
  h.uid = uid;
  h.size = dir ? kHostMadeSize : kHostBaseSize;
  h.fingerprint = host_layout_fingerprint();
  host.capacity.seq.store(2, std::memory_order_relaxed);
  __atomic_store_n(&h.magic, kHostMagic, __ATOMIC_RELEASE);
}

}  // namespace bonsai
