// SPDX-License-Identifier: MIT
// Unit tests of bonsaictl/segment/proc_table: one pass over /proc judges every slot;
// a slot is dead only when no reading of it (its pid namespace rewritten by a tenant)
// finds a live process, and a process of another pid namespace is named by our pid.
#include <catch2/catch.hpp>

#include <csignal>
#include <memory>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi/shm_abi.h"
#include "segment/proc_table.h"
#include "shm/shm_check.h"
#include "shm/shm_proc.h"
#include "shm/shm_slots.h"

using namespace bonsai;
using bonsai::ctl::ProcTable;

namespace {

int dead_pid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

constexpr uint32_t kNoSuchNs = 12345;  // no process has this pid namespace

}  // namespace

TEST_CASE("proc table: our process, a reused pid, a rewritten namespace") {
  uint64_t start;
  REQUIRE(proc_status(getpid(), start) == ProcStatus::Alive);
  ProcTable t;
  REQUIRE(t.self_ns() == proc_self_pidns());
  int here = -1;
  CHECK(t.judge(t.self_ns(), getpid(), start, here) == SlotProc::Alive);
  CHECK(here == getpid());
  CHECK(t.judge(0, getpid(), start, here) == SlotProc::Alive);  // 0: taken as ours
  CHECK(t.judge(t.self_ns(), getpid(), start - 1, here) == SlotProc::Dead);  // our pid, another process
  // Our slot with its namespace rewritten: alive under the other reading, so never
  // reclaimed, and not named as one of our pids either.
  CHECK(t.judge(kNoSuchNs, getpid(), start, here) == SlotProc::Unknown);
  CHECK(here == 0);
  // A process that has gone, in a namespace no process has: from the initial namespace
  // every process is visible, so it is dead; from elsewhere we cannot tell.
  int gone = dead_pid();
  CHECK(t.judge(kNoSuchNs, gone, start - 1, here) ==
        (t.self_ns() == kInitPidNs ? SlotProc::Dead : SlotProc::Unknown));
  CHECK(t.judge(t.self_ns(), gone, start - 1, here) == SlotProc::Dead);
  // A start time not before the table was read: a process it cannot know yet.
  CHECK(t.judge(t.self_ns(), gone, ~uint64_t{0} - 1, here) == SlotProc::Unknown);
  // A claim in progress: our own /proc read now.
  CHECK(t.judge(t.self_ns(), getpid(), kAnyStart, here) == SlotProc::Alive);
  uint64_t init_start;
  if (proc_status(1, init_start) == ProcStatus::Alive) {
    CHECK(t.judge(kNoSuchNs, 1, init_start, here) == SlotProc::Unknown);  // may be our init
    CHECK(t.judge(t.self_ns(), 1, init_start, here) == SlotProc::Alive);
  }
}

TEST_CASE("proc table: reclaim spares a live process whose slot names another namespace") {
  auto seg = std::make_unique<ShmSegment>();
  shm_header_init(*seg, sizeof(ShmSegment), ShmScope::Process, 0, "t", 0);
  uint64_t start;
  REQUIRE(proc_status(getpid(), start) == ProcStatus::Alive);
  ShmSlot* mine = slot_claim(*seg, getpid(), start, "me", 2, 1);
  ShmSlot* gone = slot_claim(*seg, dead_pid(), start - 1, "gone", 2, 1);
  REQUIRE((mine && gone));
  seg->slot_ns.pid_ns[slot_index(*seg, *mine)].store(kNoSuchNs);
  ProcTable t;
  CHECK(slots_reclaim(*seg, t.slot_judge()) == 1);
  CHECK(mine->state.load() == static_cast<uint32_t>(SlotState::Live));
  CHECK(gone->state.load() == static_cast<uint32_t>(SlotState::Free));
}

TEST_CASE("proc table: a process of a child pid namespace is named by our pid") {
  int pipefd[2];
  REQUIRE(pipe(pipefd) == 0);
  pid_t outer = fork();
  REQUIRE(outer >= 0);
  if (outer == 0) {  // unshare, then the next child is pid 1 of the new namespace
    close(pipefd[0]);
    if (unshare(CLONE_NEWPID) != 0) _exit(3);  // not root: nothing to test
    pid_t inner = fork();
    if (inner == 0) {
      char c = 'x';
      if (write(pipefd[1], &c, 1) != 1) _exit(1);
      pause();
      _exit(0);
    }
    int st;
    waitpid(inner, &st, 0);
    _exit(0);
  }
  close(pipefd[1]);
  char c;
  bool ready = read(pipefd[0], &c, 1) == 1;
  close(pipefd[0]);
  if (!ready) {
    int st;
    waitpid(outer, &st, 0);
    WARN("cannot make a pid namespace here (not root?): skipped");
    return;
  }
  // Find the inner process: the outer child's child.
  int host_pid = 0;
  for (int tries = 0; tries < 100 && !host_pid; ++tries) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/task/%d/children", outer, outer);
    if (FILE* f = std::fopen(path, "r")) {
      if (std::fscanf(f, "%d", &host_pid) != 1) host_pid = 0;
      std::fclose(f);
    }
    if (!host_pid) usleep(10'000);
  }
  REQUIRE(host_pid > 0);
  uint64_t start;
  REQUIRE(proc_status(host_pid, start) == ProcStatus::Alive);
  uint32_t ns = proc_pidns(host_pid);
  REQUIRE(ns != 0);
  CHECK(ns != proc_self_pidns());
  int levels[4];
  CHECK(proc_nspid(host_pid, levels, 4) == 2);
  CHECK(levels[0] == host_pid);
  CHECK(levels[1] == 1);
  ProcTable t;
  int here = 0;
  CHECK(t.judge(ns, 1, start, here) == SlotProc::Alive);
  CHECK(here == host_pid);
  CHECK(t.judge(ns, 1, start - 1, here) == SlotProc::Dead);  // its namespace is visible: another start is gone
  // Its slot with the namespace rewritten to ours: our pid 1 is not it, yet it is alive as
  // pid 1 somewhere: left alone.
  CHECK(t.judge(t.self_ns(), 1, start, here) == SlotProc::Unknown);
  kill(host_pid, SIGKILL);
  int st;
  waitpid(outer, &st, 0);
}
