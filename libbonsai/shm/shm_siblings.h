// SPDX-License-Identifier: MIT
// Shares beside containers: a container's processes cannot reach the host segment (their
// device does not mount it), so their takes at their guaranteed rates never charge the
// host's bucket, and the host would lend that guarantee to the user's other services.
// They publish them in their own service's segment instead (ShmLimits::nohost_taken,
// shm_publish_nohost); a borrower reads every segment of its user under its prefix and
// holds back what each moved lately, clamped to that service's own rates
// (share_reserved_rate): a tenant's forged counter costs at most its own guarantee.
// Read with pread(2), never mapped (a tenant truncating its file cannot fault us);
// refreshed at most every kSiblingsRefreshNs by one caller at a time, the others read the
// last sums: no allocation, no lock (a compare-and-swap tried once), bounded work.
#pragma once
#include <cstdint>

namespace bonsai {

inline constexpr uint64_t kSiblingsRefreshNs = 100'000'000;
inline constexpr uint32_t kSiblingsMax = 32;  // segments looked at per refresh (the user's services)

// Units/s of capacity rule `host1` (1-based) to hold back, as of the last refresh; `now_ns`
// any monotonic clock of the caller (the same at every call).
uint64_t shm_siblings_reserved(const char* prefix, unsigned uid, uint8_t host1, uint64_t now_ns) noexcept;

}  // namespace bonsai
