// SPDX-License-Identifier: MIT
// The supervisor's protected reads (sv_protect.h has the reads themselves and the
// workers): a read that may go is made on a copy of its descriptor, here if the page
// cache answers it at once (RWF_NOWAIT), else by a worker, which answers it; then its
// real call's time goes into the service's histogram and it is charged by what it moved
// (as the ledger settles any read: the reservation given back or the rest charged
// late). A read that was not made goes with CONTINUE, as every read did before, settled
// at the thread's next call by its counters. This part owns the workers, the loop's own
// read buffer, and the count of reads timed.
#pragma once
#include <cstdint>
#include <mutex>
#include <vector>

#include "segment/shm_client.h"
#include "supervisor/sv_held.h"
#include "supervisor/sv_ledger.h"
#include "supervisor/sv_protect.h"
#include "supervisor/sv_serve.h"
#include "supervisor/sv_view.h"

namespace bonsai::ctl {

class SvTimedReads {
 public:
  // `trees`: whose listeners are live (a read is answered on its own tree's only).
  SvTimedReads(Segment& seg, SvLimits& lim, SvLedger& ledger, const SvJoinServer& trees)
      : seg_(seg), lim_(lim), ledger_(ledger), trees_(trees) {}
  // Hands the read `h` to a worker, or makes it here, or, when it cannot be made, lets it
  // go (CONTINUE) and settles it as any read. `th`, `p`: its thread and process.
  void go(Held& h, Thread& th, Proc& p);
  // The reads the workers made: timed, charged, answered; those not made go with CONTINUE.
  void finish();
  size_t in_flight() const { return pool_.in_flight(); }
  int event_fd() const { return pool_.event_fd(); }
  // Held by the loop while it receives a notification (sv_timed_deliver).
  std::mutex& mem_mu() { return pool_.mem_mu(); }
  // The end: reads in flight made, not answered (their tasks are gone), their descriptors closed.
  void stop();
  uint64_t timed() const { return timed_; }

 private:
  // Times, charges and answers a read made (by a worker or here), or lets it go if not made; closes its copy.
  void complete(SvTimedRead& t);
  // A read not made by a worker goes as the kernel's, settled at the thread's next call.
  void continue_read(Thread& th, CallId call, const uint8_t bucket[2], uint64_t asked, uint64_t reserve,
                     uint64_t seq, int lfd, uint64_t id);

  Segment& seg_;
  SvLimits& lim_;
  SvLedger& ledger_;
  const SvJoinServer& trees_;
  SvTimedPool pool_;
  SvTimedScratch scratch_;  // the loop's own reads (from the page cache)
  bool said_untimed_ = false;
  uint64_t timed_ = 0;  // protected reads made and timed
};

}  // namespace bonsai::ctl
