// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/shm/shm_slots and shm_proc: claiming a slot, adopting it
// again after exec, release folding the counters into the exited totals, and
// reclaim of slots whose process died (a real child) or whose pid was reused.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <csignal>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi/shm_abi.h"
#include "shm/shm_check.h"
#include "shm/shm_proc.h"
#include "shm/shm_slots.h"

using namespace bonsai;

namespace {

std::unique_ptr<ShmSegment> fresh() {
  auto seg = std::make_unique<ShmSegment>();
  shm_header_init(*seg, sizeof *seg, ShmScope::Process, 0, "t", 0);  // the base alone: layout 14
  return seg;
}

unsigned live(const ShmSegment& seg) {
  unsigned n = 0;
  for (const auto& s : seg.slots) n += s.state.load() == static_cast<uint32_t>(SlotState::Live);
  return n;
}

// A pid that has exited and been reaped.
int dead_pid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

}  // namespace

TEST_CASE("proc: our own start time is stable, a reaped child is dead") {
  uint64_t a = 0, b = 0;
  REQUIRE(proc_status(getpid(), a) == ProcStatus::Alive);
  REQUIRE(proc_status(getpid(), b) == ProcStatus::Alive);
  CHECK(a == b);
  CHECK(a > 0);
  CHECK(proc_is(getpid(), a));
  CHECK_FALSE(proc_is(getpid(), a + 1));
  uint64_t t;
  CHECK(proc_status(dead_pid(), t) == ProcStatus::Dead);
  char comm[16];
  proc_comm(getpid(), comm, sizeof comm);
  CHECK(comm[0] != '\0');
}

TEST_CASE("slots: claim, adopt after exec, release folds counts into exited") {
  auto seg = fresh();
  uint64_t start;
  REQUIRE(proc_status(getpid(), start) == ProcStatus::Alive);
  ShmSlot* s = slot_claim(*seg, getpid(), start, "dd", 2, 1);
  REQUIRE(s);
  CHECK(s->pid.load() == getpid());
  CHECK(std::string(s->comm) == "dd");
  CHECK(live(*seg) == 1);
  s->counters.lanes[0].by_call[static_cast<size_t>(CallId::write)].calls = 7;
  s->counters.lanes[3].by_call[static_cast<size_t>(CallId::write)].bytes = 4096;
  s->counters.throttled[static_cast<size_t>(CallId::write)].store(2);
  s->counters.wait_ns[static_cast<size_t>(CallId::write)].store(5000);
  // The same process (after exec) gets the same slot back, counts intact.
  CHECK(slot_claim(*seg, getpid(), start, "cat", 4, 1) == s);
  CHECK(s->seen_seq.load() == 4);
  CHECK(live(*seg) == 1);
  CHECK(slot_release(*seg, *s));
  CHECK_FALSE(slot_release(*seg, *s));  // exactly once
  auto w = static_cast<size_t>(CallId::write);
  CHECK(seg->exited.processes.load() == 1);
  CHECK(seg->exited.calls[w].load() == 7);
  CHECK(seg->exited.bytes[w].load() == 4096);
  CHECK(seg->exited.throttled[w].load() == 2);
  CHECK(seg->exited.wait_ns[w].load() == 5000);
  CHECK(live(*seg) == 0);
  // A new claim starts from zero.
  ShmSlot* again = slot_claim(*seg, getpid(), start, "dd", 2, 1);
  REQUIRE(again);
  CHECK(counters_total(again->counters, CallId::write).calls == 0);
}

TEST_CASE("slots: dead processes and reused pids are reclaimed, live ones kept") {
  auto seg = fresh();
  uint64_t start;
  REQUIRE(proc_status(getpid(), start) == ProcStatus::Alive);
  ShmSlot* mine = slot_claim(*seg, getpid(), start, "me", 2, 1);
  ShmSlot* dead = slot_claim(*seg, dead_pid(), 12345, "gone", 2, 1);
  ShmSlot* reused = slot_claim(*seg, getpid(), start + 1, "old", 2, 1);  // same pid, other start
  REQUIRE((mine && dead && reused));
  dead->counters.lanes[0].by_call[static_cast<size_t>(CallId::read)].bytes = 100;
  reused->counters.lanes[0].by_call[static_cast<size_t>(CallId::read)].bytes = 20;
  CHECK(slots_reclaim_dead(*seg) == 2);
  CHECK(live(*seg) == 1);
  CHECK(mine->state.load() == static_cast<uint32_t>(SlotState::Live));
  CHECK(seg->exited.processes.load() == 2);
  CHECK(seg->exited.bytes[static_cast<size_t>(CallId::read)].load() == 120);
  CHECK(slots_reclaim_dead(*seg) == 0);
}

TEST_CASE("slots: a full segment reclaims a dead slot for a newcomer, else refuses") {
  auto seg = fresh();
  uint64_t start;
  REQUIRE(proc_status(getpid(), start) == ProcStatus::Alive);
  for (unsigned i = 0; i < kMaxSlots; ++i) REQUIRE(slot_claim(*seg, getpid(), start + 1 + i, "x", 0, 0));
  // Every slot names our pid with a wrong start time: all are reclaimable, and a claim
  // takes one (one read of /proc for them all), the next claim another.
  ShmSlot* s = slot_claim(*seg, getpid(), start, "new", 0, 0);
  REQUIRE(s);
  CHECK(seg->exited.processes.load() == 1);
  CHECK(live(*seg) == kMaxSlots);
  CHECK(slots_reclaim_dead(*seg) == kMaxSlots - 1);
  CHECK(live(*seg) == 1);
  // Now fill every slot with live identities (ours, adopted) - only one real process exists,
  // so fake a full table with Claiming slots of a live pid: never reclaimed.
  for (auto& slot : seg->slots)
    if (&slot != s) slot.pid.store(getpid()), slot.state.store(static_cast<uint32_t>(SlotState::Claiming));
  CHECK(seg->exited.uncounted.load() == 0);
  CHECK(slot_claim(*seg, dead_pid(), 1, "late", 0, 0) == nullptr);
  CHECK(seg->exited.uncounted.load() == 1);  // stat says so (issue 8: >256 silently uncounted)
  CHECK(slot_claim_failure_is_news());       // the 1st, 2nd, 4th... say so; not the 3rd
  CHECK(slot_claim(*seg, dead_pid(), 1, "late", 0, 0) == nullptr);
  CHECK(slot_claim_failure_is_news());
  CHECK(slot_claim(*seg, dead_pid(), 1, "late", 0, 0) == nullptr);
  CHECK_FALSE(slot_claim_failure_is_news());
  CHECK(slot_claim(*seg, dead_pid(), 1, "late", 0, 0) == nullptr);
  CHECK(slot_claim_failure_is_news());
  CHECK(slots_scan_end(*seg) == kMaxSlots);
}

TEST_CASE("slots: a claim in a full table reclaims one slot, not every dead one") {
  auto seg = fresh();
  uint64_t start;
  REQUIRE(proc_status(getpid(), start) == ProcStatus::Alive);
  // Every slot a different pid past PID_MAX_LIMIT (never alive): the claim proves the
  // first it probes dead, folds that one and leaves the rest to bonsaictl's readers.
  for (unsigned i = 0; i < kMaxSlots; ++i) {
    ShmSlot& slot = seg->slots[i];
    slot.pid.store(static_cast<int>(5'000'000 + i));
    slot.start_time.store(start);
    slot.state.store(static_cast<uint32_t>(SlotState::Live));
  }
  seg->exited.slots_used.store(kMaxSlots);
  ShmSlot* s = slot_claim(*seg, getpid(), start, "n", 0, 0);
  REQUIRE(s);
  CHECK(seg->exited.processes.load() == 1);
  CHECK(live(*seg) == kMaxSlots);
  CHECK(slots_reclaim_dead(*seg) == kMaxSlots - 1);
  CHECK(live(*seg) == 1);
  CHECK(s->state.load() == static_cast<uint32_t>(SlotState::Live));
}

TEST_CASE("slots: scans stop at the high-water mark, which is untrusted") {
  auto seg = fresh();
  uint64_t start;
  REQUIRE(proc_status(getpid(), start) == ProcStatus::Alive);
  CHECK(slots_scan_end(*seg) == 0);
  ShmSlot* a = slot_claim(*seg, getpid(), start, "a", 0, 0);
  ShmSlot* b = slot_claim(*seg, getpid(), start + 1, "b", 0, 0);
  REQUIRE((a && b));
  CHECK(slot_index(*seg, *b) == 1);
  CHECK(slots_scan_end(*seg) == 2);
  CHECK(slots_reclaim_dead(*seg) == 1);  // b: our pid, another start time
  CHECK(slots_scan_end(*seg) == 2);      // a high-water mark never goes down
  CHECK(slot_claim(*seg, getpid(), start + 2, "c", 0, 0) == b);  // lowest free slot first
  seg->exited.slots_used.store(0xFFFFFFFFu);  // garbage: clamped
  CHECK(slots_scan_end(*seg) == kMaxSlots);
  CHECK(slots_reclaim_dead(*seg) == 1);
}

TEST_CASE("slots: waiting threads are counted, never below zero, and cleared on claim") {
  auto seg = fresh();
  uint64_t start;
  REQUIRE(proc_status(getpid(), start) == ProcStatus::Alive);
  ShmSlot* s = slot_claim(*seg, getpid(), start, "w", 0, 0);
  REQUIRE(s);
  slot_wait_enter(s);
  slot_wait_enter(s);
  CHECK(s->waiting.load() == 2);
  slot_wait_leave(s);
  slot_wait_leave(s);
  slot_wait_leave(s);
  CHECK(s->waiting.load() == 0);
  slot_wait_enter(nullptr);  // not attached: no-op
  slot_wait_leave(nullptr);
  slot_wait_enter(s);
  CHECK(slot_claim(*seg, getpid(), start, "w2", 4, 0) == s);  // exec: one thread, not waiting
  CHECK(s->waiting.load() == 0);
}

TEST_CASE("slots: a claim's reclaim looks up its own pid namespace's slots only") {
  auto seg = fresh();
  uint32_t self = proc_self_pidns();
  REQUIRE(self != 0);
  uint64_t start;
  REQUIRE(proc_status(getpid(), start) == ProcStatus::Alive);
  // A claim records our namespace.
  ShmSlot* mine = slot_claim(*seg, getpid(), start, "me", 2, 1);
  REQUIRE(mine);
  CHECK(seg->slot_ns.pid_ns[slot_index(*seg, *mine)].load() == self);
  // Another namespace's pid (dead here): not ours to look up.
  ShmSlot* theirs = slot_claim(*seg, dead_pid(), 12345, "dd", 2, 1);
  REQUIRE(theirs);
  seg->slot_ns.pid_ns[slot_index(*seg, *theirs)].store(12345);
  CHECK(slots_reclaim_dead(*seg) == 0);
  CHECK(theirs->state.load() == static_cast<uint32_t>(SlotState::Live));
  // A slot is adopted after exec only by the same pid in the same namespace.
  seg->slot_ns.pid_ns[slot_index(*seg, *mine)].store(12345);
  CHECK(slot_claim(*seg, getpid(), start, "me", 2, 1) != mine);
  CHECK(mine->state.load() == static_cast<uint32_t>(SlotState::Live));
}

TEST_CASE("slots: a claim reads the slots through the segment's descriptor when it has one") {
  int fd = memfd_create("seg", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, sizeof(ShmSegment)) == 0);
  void* m = mmap(nullptr, sizeof(ShmSegment), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  REQUIRE(m != MAP_FAILED);
  auto* seg = static_cast<ShmSegment*>(m);
  shm_header_init(*seg, sizeof(ShmSegment), ShmScope::Process, 0, "t", 0);
  uint64_t start;
  REQUIRE(proc_status(getpid(), start) == ProcStatus::Alive);
  ShmSlot* other = slot_claim(*seg, getpid(), start + 1, "old", 2, 1, fd);  // a dead one (another start)
  ShmSlot* s = slot_claim(*seg, getpid(), start, "me", 2, 1, fd);
  REQUIRE((other && s));
  CHECK(slot_index(*seg, *s) == 1);
  CHECK(slot_claim(*seg, getpid(), start, "exec", 3, 1, fd) == s);  // adopted after exec
  CHECK(std::string(s->comm) == "exec");
  // Every slot taken: the dead one (our pid, another start time) is reclaimed and taken.
  for (unsigned i = 2; i < kMaxSlots; ++i) {
    seg->slots[i].pid.store(getpid()), seg->slots[i].start_time.store(start);
    seg->slots[i].state.store(static_cast<uint32_t>(SlotState::Live));
  }
  seg->exited.slots_used.store(kMaxSlots);
  ShmSlot* again = slot_claim(*seg, getpid(), start + 2, "new", 2, 1, fd);
  CHECK(again == other);
  CHECK(seg->exited.processes.load() == 1);
  again->start_time.store(start);  // now every slot names a live process
  CHECK(slot_claim(*seg, getpid(), start + 3, "late", 2, 1, fd) == nullptr);  // live ones are kept
  CHECK(seg->exited.uncounted.load() == 1);
  munmap(m, sizeof(ShmSegment));
  close(fd);
}

TEST_CASE("slots: a claim that knows it holds no slot looks at a window of a table found full") {
  auto seg = fresh();
  uint64_t start;
  REQUIRE(proc_status(getpid(), start) == ProcStatus::Alive);
  const uint32_t ns = proc_self_pidns();
  // A live process the tenant's slots name (as 1,024 forged host slots would name pid 1).
  pid_t other = fork();
  if (other == 0) {
    pause();
    _exit(0);
  }
  REQUIRE(other > 0);
  uint64_t other_start = 0;
  REQUIRE(proc_status(other, other_start) == ProcStatus::Alive);
  for (unsigned i = 0; i < kMaxSlots; ++i) {
    seg->slots[i].pid.store(other), seg->slots[i].start_time.store(other_start);
    seg->slot_ns.pid_ns[i].store(ns);
    seg->slots[i].state.store(static_cast<uint32_t>(SlotState::Live));
  }
  seg->exited.slots_used.store(kMaxSlots);
  const int me = getpid();  // the claimer: a fork child, say
  const unsigned at = static_cast<unsigned>(me) * kClaimWindow % kMaxSlots;
  // A whole pass finds nothing and marks the table full at this epoch.
  SlotKnown k{};
  CHECK(slot_claim(*seg, me, start, "n", 0, 0, -1, &k) == nullptr);
  const uint64_t epoch = seg->exited.slot_epoch.load();
  CHECK(k.epoch == epoch);
  CHECK(seg->exited.full_epoch.load() == epoch + 1);
  // A slot freed behind the epoch's back (a tenant's write, a 0.2.0 process's release)
  // outside the window: a claim that knows it has no slot does not see it (bounded) ...
  const unsigned outside = (at + kClaimWindow + 100) % kMaxSlots;
  seg->slots[outside].state.store(static_cast<uint32_t>(SlotState::Free));
  SlotKnown none{kMaxSlots, true, epoch};
  CHECK(slot_claim(*seg, me, start, "n", 0, 0, -1, &none) == nullptr);
  CHECK(seg->exited.full_epoch.load() == epoch + 1);
  // ... one whose window holds a free slot takes it, and the epoch moves ...
  const unsigned inside = (at + 3) % kMaxSlots;
  seg->slots[inside].state.store(static_cast<uint32_t>(SlotState::Free));
  none = SlotKnown{kMaxSlots, true, epoch};
  ShmSlot* s = slot_claim(*seg, me, start, "n", 0, 0, -1, &none);
  REQUIRE(s);
  CHECK(slot_index(*seg, *s) == inside);
  CHECK(seg->exited.slot_epoch.load() == epoch + 1);
  // ... and then "none" at the old epoch no longer holds: a whole pass (its own slot first).
  none = SlotKnown{kMaxSlots, true, epoch};
  CHECK(slot_claim(*seg, me, start, "exec", 0, 0, -1, &none) == s);
  CHECK(std::string(s->comm) == "exec");
  // The slot named by the image before exec is taken at once if it names this process ...
  SlotKnown held{inside, false, 0};
  CHECK(slot_claim(*seg, me, start, "again", 0, 0, -1, &held) == s);
  CHECK(std::string(s->comm) == "again");
  // ... and is only a hint: naming another process's slot gets that one nothing.
  const unsigned theirs = (at + 4) % kMaxSlots;
  SlotKnown wrong{theirs, false, 0};
  CHECK(slot_claim(*seg, me, start, "x", 0, 0, -1, &wrong) == s);  // its own, by a pass
  CHECK(seg->slots[theirs].pid.load() == other);
  // A claim that knows nothing makes a whole pass: the slot outside any window is found.
  ShmSlot* t = slot_claim(*seg, me, start + 1, "m", 0, 0);
  REQUIRE(t);
  CHECK(slot_index(*seg, *t) == outside);
  // A release moves the epoch: a table found full is looked at whole again.
  const uint64_t before = seg->exited.slot_epoch.load();
  REQUIRE(slot_release(*seg, *s));
  CHECK(seg->exited.slot_epoch.load() == before + 1);
  CHECK(seg->exited.full_epoch.load() != seg->exited.slot_epoch.load() + 1);
  kill(other, SIGKILL);
  waitpid(other, nullptr, 0);
}
