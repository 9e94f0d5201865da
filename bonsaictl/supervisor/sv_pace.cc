// SPDX-License-Identifier: MIT
// The supervisor's paced writes (sv_pace.h): a call on a descriptor that must not wait
// takes its place in the bucket's queue (sv_turn.h for the sizes of its turn), and is
// held until the place is due, then made cut to it or let go whole.
#include "supervisor/sv_pace.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "supervisor/sv_turn.h"

namespace bonsai::ctl {

SvPaceWay SvPacer::pace(const SvSyscall& sc, const __u64 a[6], bool compat, Thread& th, Proc& p, Held& h,
                        uint64_t asked, uint64_t now) {
  // Writes with a destination and a size, one message at a time (sendmmsg and tee keep
  // their own shapes; reads are reserved and settled as before).
  if (!sc.is_write || sc.fd_arg < 0 || sc.moved == SvMoved::Unit || sc.nr == SYS_sendmmsg || sc.nr == SYS_tee)
    return SvPaceWay::No;
  if (asked == 0 || (!lim_.params(h.bucket[0]) && !lim_.params(h.bucket[1]))) return SvPaceWay::No;
  bool dontwait = (sc.nr == SYS_sendto && (a[3] & MSG_DONTWAIT)) || (sc.nr == SYS_sendmsg && (a[2] & MSG_DONTWAIT)) ||
                  (sc.nr == SYS_splice && (a[5] & SPLICE_F_NONBLOCK));
  // A zero-copy call whose source cannot wait either is made here, cut to its place.
  bool cuttable = sc.src_fd_arg >= 0 && !compat && sv_emu_prepare(sc, a, p.pidfd, UINT64_MAX, h.emu);
  if (sc.src_fd_arg >= 0 && !cuttable) return SvPaceWay::No;
  int out = cuttable ? h.emu.out_fd : sv_fd_copy(p.pidfd, static_cast<int>(a[sc.fd_arg]));
  struct stat st{};
  int fl = out >= 0 && ::fstat(out, &st) == 0 ? ::fcntl(out, F_GETFL) : -1;
  if (!cuttable && out >= 0) ::close(out);
  if (fl < 0 || !sv_must_not_wait(st.st_mode, fl, dontwait)) {
    sv_emu_close(h.emu);
    h.emu = SvEmu{};
    return SvPaceWay::No;
  }
  ledger_.pay(th, p, now, false);  // what the thread owes from earlier calls: taken, not waited for
  uint64_t key = (static_cast<uint64_t>(st.st_dev) << 40) ^ static_cast<uint64_t>(st.st_ino);
  SvDesc& d = descs_[key];
  uint64_t queue_ns = 0;  // the longest queue of its buckets
  int bytes = 0, byte_i = 0;  // its byte buckets: how many, the last one
  for (int i = 0; i < 2; ++i)
    if (const BucketParams* bp = lim_.params(h.bucket[i])) {
      uint64_t tat = ledger_.state(p, h.bucket[i]).tat_ns.load(std::memory_order_relaxed);
      queue_ns = std::max(queue_ns, tat > now ? tat - now : 0);
      if (!bp->per_call) ++bytes, byte_i = i;
    }
  // A place must stay within what the bucket's clock can hold (max_ahead_ns: beyond it
  // the clock reads as garbage and is forgotten). A call that cannot be cut and asks
  // more than half of it, with the queue there is, is charged as a blocking call
  // instead: its debt is taken in pieces, each when due.
  if (!cuttable)
    for (int i = 0; i < 2; ++i)
      if (const BucketParams* bp = lim_.params(h.bucket[i]);
          bp && queue_ns + bucket_cost_ns(*bp, asked == UINT64_MAX ? 0 : asked) > bp->max_ahead_ns / 2)
        return SvPaceWay::No;
  bool light = sv_pace_light(d.last_place, now, queue_ns);
  d.last_use = now;
  uint64_t need = cuttable ? h.emu.count : asked;
  uint64_t bound = UINT64_MAX;  // what the call may move: the least any byte bucket gave
  bool queued = false;
  h.deadline = 0;
  if (bytes == 1) {  // its turn, with the descriptor's credit in that bucket
    uint8_t b = h.bucket[byte_i];
    if (d.bucket != b || d.seq != lim_.view().seq) d.credit = 0, d.bucket = b, d.seq = lim_.view().seq;
    SvTurn t = sv_pace_turn(ledger_.state(p, b), *lim_.params(b), need, cuttable, light, d.credit, now, lim_.share_host(b));
    lim_.share_borrowed(b, t.borrowed);
    queued |= t.queued;
    h.deadline = t.due;
    h.reserved[byte_i] = bound = t.moves;
  }
  uint64_t units = sv_pace_units(need, cuttable, lim_.params(h.bucket[0]), lim_.params(h.bucket[1]));
  for (int i = 0; i < 2; ++i) {  // call-rate buckets; both byte buckets (no credit kept)
    const BucketParams* bp = lim_.params(h.bucket[i]);
    if (!bp || (bytes == 1 && !bp->per_call)) continue;
    SvPlace pl = sv_pace_take(ledger_.state(p, h.bucket[i]), *bp, need, units, units, light, now, lim_.share_host(h.bucket[i]));
    lim_.share_borrowed(h.bucket[i], pl.borrowed ? pl.units : 0);
    queued |= pl.queued;
    h.deadline = std::max(h.deadline, pl.due);
    h.reserved[i] = bp->per_call ? 0 : pl.units;
    if (!bp->per_call) bound = std::min(bound, pl.units);
  }
  if (queued) d.last_place = now;
  h.paced = true;
  ProcessCounters* pc = p.slot ? &p.slot->counters : nullptr;
  auto c = static_cast<size_t>(h.call);
  if (cuttable) {
    if (bound < h.emu.count) {
      h.emu.count = bound;
      if (pc) pc->shortened[c].fetch_add(1, std::memory_order_relaxed);
    }
  } else {
    // Let go whole: it took all it asks (one turn when that is unknown), settled after by
    // what moved as any write (sv_ledger.cc). Under call-rate buckets only it took its
    // unit, and its bytes are counted as asked.
    if (bound == UINT64_MAX) {
      ledger_.count(p, h.call, 0, asked == UINT64_MAX ? 0 : asked);
    } else {
      ledger_.count(p, h.call, 0, bound);
      if (sc.moved == SvMoved::WriteChar) {
        ledger_.io_baseline(th);
        th.owed = Owed{true, sc.moved, h.call, {h.bucket[0], h.bucket[1]}, asked, bound, lim_.view().seq, bound};
      }
    }
  }
  if (!h.deadline) return cuttable ? SvPaceWay::Make : SvPaceWay::Go;
  if (pc) pc->held_ns[c].fetch_add(h.deadline - now, std::memory_order_relaxed);
  return SvPaceWay::Hold;
}

void SvPacer::sweep(uint64_t now) {
  for (auto it = descs_.begin(); it != descs_.end();)
    it = now - it->second.last_use > 10 * kPaceLightAfterNs ? descs_.erase(it) : std::next(it);
}


}  // namespace bonsai::ctl
