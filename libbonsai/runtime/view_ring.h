// SPDX-License-Identifier: MIT
// The ring of views and its generation protocol. Views live in a ring of kViewRing
// slots (g_ring), each rewritten under a new generation, odd while it is written
// (sys/word_copy.h for the words); a reader holding a view across a call copies what it
// needs at once (Ticket::params) and checks the generation, so no install, at any rate,
// tears what a reader uses. The one writer is limiter_install (limiter_install.cc,
// installs serialised by limiter_install_begin); the readers are the ticket's lookups
// (ticket.h) and the waits that find a rule again in new limits (limiter.cc).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "abi/limits_abi.h"
#include "bucket/limits_view.h"

namespace bonsai {

// The ring of views and, just before its first slot, the set BONSAI_LIMITS is parsed
// into (limiter_setup.cc). A process's first install builds its view in place in that
// slot (limiter_install), so a start with limits writes the ring's counters, the set and
// the view's head: two .bss pages, the struct starting one (see
// tests/preload/startup_pages prints the pages a start writes).
inline constexpr size_t kViewRing = 16;
struct alignas(4096) ViewRing {
  std::atomic<size_t> next_view;   // the slot the next install takes (mod kViewRing)
  std::atomic<uint64_t> last_gen;  // even; each install takes the next two
  LimitSet env_limits;
  LimitsView views[kViewRing];
};
extern constinit ViewRing g_ring;

// A view's generation (acquire): odd while its slot is being written.
inline uint64_t view_gen(const LimitsView* v) noexcept { return __atomic_load_n(&v->gen, __ATOMIC_ACQUIRE); }

}  // namespace bonsai
