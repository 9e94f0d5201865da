// SPDX-License-Identifier: MIT
// The host segment (/<prefix>bonsai-host.<uid>): one per user and namespace prefix,
// holding the host's capacity per call set (YAML `host: capacity:`) and one bucket per
// capacity rule that the services of that user under that prefix share (bucket/share.h).
// Only one user's services share it: a bucket writable by several users would let any
// of them take the others' guarantees. Shared by libbonsai (which trusts none of it)
// and bonsaictl (which owns it). Versioned as service segments (abi/shm_abi.h): ShmHost
// is the base, frozen as layout 14 made it; from layout 15 a ShmSectionDir follows it and
// anything new is a section listed there. Bump BONSAI_ABI_VERSION with any section.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "abi/bucket_state.h"
#include "abi/limits_abi.h"
#include "abi/shm_abi.h"

namespace bonsai {

inline constexpr uint64_t kHostMagic = 0x3154534f484e4f42ull;  // "BONHOST1"

inline constexpr uint64_t host_layout_fingerprint() {
  return shm_layout_fingerprint() ^ (uint64_t{sizeof(BucketState)} << 20) ^ 0x484f5354ull;
}

struct alignas(64) ShmHostHeader {
  uint64_t magic;        // kHostMagic
  uint32_t version;      // BONSAI_ABI_VERSION
  uint32_t uid;          // owner, as bonsaictl saw it
  uint64_t size;         // layout 14: sizeof(ShmHost); 15 on: every byte it spans (base, directory, sections)
  uint64_t fingerprint;  // host_layout_fingerprint()
  std::atomic<uint64_t> changed_unix_ns;
  uint64_t pad_[3];
};

struct ShmHost {
  ShmHostHeader header;
  ShmLimits capacity;                 // the capacity rules (rates, depths), behind the seqlock
  BucketState buckets[kMaxRules];     // one per capacity rule
};
// What the host lent is the sum of its services' ShmShares::borrowed (bonsaictl adds
// them up): counting it here too would cost a fourth atomic per borrowing refill.

static_assert(sizeof(ShmHostHeader) == 64);
static_assert(offsetof(ShmHost, capacity) == 64);
static_assert(offsetof(ShmHost, buckets) % 64 == 0);

// The base as layout 14 (0.2.0) made it: frozen. The directory follows it.
inline constexpr uint64_t kHostBaseSize = 6848;
inline constexpr uint64_t kHostBaseFingerprint = 0x1a4c26254c6f41f0ull;
inline constexpr uint64_t kHostDirOffset = kHostBaseSize;
inline constexpr uint64_t kHostMadeSize = kHostBaseSize + sizeof(ShmSectionDir);
static_assert(sizeof(ShmHost) == kHostBaseSize && host_layout_fingerprint() == kHostBaseFingerprint,
              "the host segment's base is frozen: add a section instead");

}  // namespace bonsai
