// SPDX-License-Identifier: MIT
// The supervisor's writes on descriptors that must not wait (non-blocking ones): each
// takes its place in its buckets' queues through the library's one take
// (bucket/pace_step.h, sized by sv_turn.h: the supervisor's quantum, the descriptor's
// credit), and its notification is held until the place is due, then made cut to it
// (a zero-copy call) or let go whole. The pacer owns the descriptors such calls were
// made on (their last place, credit), forgotten when unused for a while.
#pragma once
#include <linux/types.h>

#include <cstdint>
#include <unordered_map>

#include "supervisor/sv_held.h"
#include "supervisor/sv_ledger.h"
#include "supervisor/sv_view.h"

namespace bonsai::ctl {

// A descriptor that paced calls are made on (sv_turn.h).
struct SvDesc {
  uint64_t last_place = 0;  // when it last took a place in a queue (0: never): light after a while
  uint64_t last_use = 0;
  uint64_t credit = 0;      // units of `bucket` its last place held beyond its call
  uint8_t bucket = kNoBucket;
  uint64_t seq = 0;         // the view `bucket` is of
};

// How a paced call goes: not paced (charged as any call), now (made cut to its place,
// or let go whole), or held until its place is due (h.deadline).
enum class SvPaceWay { No, Make, Go, Hold };

class SvPacer {
 public:
  SvPacer(SvLimits& lim, SvLedger& ledger) : lim_(lim), ledger_(ledger) {}
  // The call `sc` (args `a`; `compat`: a 32-bit one, never made here) of `th` in `p`,
  // asking `asked` bytes, whose buckets are h.bucket.
  SvPaceWay pace(const SvSyscall& sc, const __u64 a[6], bool compat, Thread& th, Proc& p, Held& h, uint64_t asked,
                 uint64_t now);
  // Descriptors unused for a while (light again, closed, or a stream that ended):
  // forgotten, with their credit (at most one turn each).
  void sweep(uint64_t now);

 private:
  SvLimits& lim_;
  SvLedger& ledger_;
  // The descriptors paced calls were made on, by st_dev and st_ino of the destination
  // (the same socket in every process that shares it).
  std::unordered_map<uint64_t, SvDesc> descs_;
};

}  // namespace bonsai::ctl
