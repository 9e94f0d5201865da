// SPDX-License-Identifier: MIT
// The supervisor's notification handler, in four steps (the shape of crun's seccomp
// notify plugins): decode the notification (its ABI, a 32-bit call in the 64-bit
// table's form, a task it cannot see refused); look up its thread and process (the
// thread's last call settled by its counters), its buckets and what it asks; one
// strategy per kind of call -- a write that must not wait takes its place in the queue
// (sv_pace.h), a zero-copy call made here cut to its reservation (sv_emulate.h), a read
// whose size shows afterwards reserves a chunk, a write prepays what it asks, others
// are charged what they ask cut to what their source holds; and a disposition:
// CONTINUE, a value, held (sv_held.h), made here, or a protected read made and timed
// (sv_timed.h). Released held calls come back here to be made or answered.
#pragma once
#include <seccomp.h>

#include "supervisor/supervisor.h"
#include "supervisor/sv_held.h"
#include "supervisor/sv_ledger.h"
#include "supervisor/sv_pace.h"
#include "supervisor/sv_timed.h"
#include "supervisor/sv_view.h"

namespace bonsai::ctl {

// What becomes of a call.
enum class SvGo { Continue, Hold, Make, Timed };

// A decoded notification: in the 64-bit table's form.
struct SvCall {
  seccomp_notif req{};
  const SvSyscall* sc = nullptr;
  bool compat = false;  // a 32-bit call: its memory read as 32-bit layouts, never made here
  int lfd = -1;
};

class SvHandler final : public SvHeldGo {
 public:
  SvHandler(Segment& seg, SvLimits& lim, SvLedger& ledger, SvHeldQueue& held, SvTimedReads& timed, SvPacer& pacer,
            SupervisorStats& stats)
      : seg_(seg), lim_(lim), ledger_(ledger), held_(held), timed_(timed), pacer_(pacer), stats_(stats) {}
  // One notification received on listener `lfd`.
  void handle(const seccomp_notif& in, int lfd);
  void held_go(Held& h, Proc* p, uint64_t now) override;

 private:
  // @return false: answered already (x32, a task it cannot see).
  bool decode(const seccomp_notif& in, int lfd, SvCall& c);
  uint64_t asked_bytes(const SvCall& c);
  // The strategies, one per kind: each charges the call and says what becomes of it.
  SvGo zero_copy(Thread& th, Proc& p, Held& h, uint64_t now);
  void read_later(const SvCall& c, Thread& th, Held& h, uint64_t asked, uint64_t reserve);
  void write_prepaid(const SvCall& c, Thread& th, Proc& p, Held& h, uint64_t asked, uint64_t reserve);
  bool charged_as_asked(const SvCall& c, Thread& th, Proc& p, Held& h, uint64_t asked, int fd);
  // A call charged: it goes once its buckets allow it.
  SvGo when_paid(Thread& th, Proc& p, Held& h, bool limited, uint64_t now);
  void dispose(SvGo go, Held& h, Thread& th, Proc& p, uint64_t now);
  // Makes an emulated call (h.emu) and answers it with its result; gives back to the
  // buckets what it reserved and did not move. A notification no longer valid
  // (the thread was interrupted or killed) is not made, and its reservation given back.
  void emulate(Held& h, uint64_t now);

  Segment& seg_;
  SvLimits& lim_;
  SvLedger& ledger_;
  SvHeldQueue& held_;
  SvTimedReads& timed_;
  SvPacer& pacer_;
  SupervisorStats& stats_;
  bool said_unseen_ = false;  // a notification of a task it cannot see (pid 0): refused
};

}  // namespace bonsai::ctl
