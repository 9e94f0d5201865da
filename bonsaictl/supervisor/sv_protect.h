// SPDX-License-Identifier: MIT
// Protected reads of supervised programs (docs/reference/protect.md "Supervised
// programs"). The supervisor answers most calls CONTINUE and never sees them end, so it
// cannot time them. A read at an offset of its own of a service whose `protect:` names
// it (pread; preadv, and preadv2 at an offset, charged and timed as preadv) is made by
// the supervisor itself on a copy of the target's descriptor (pidfd_getfd), into a
// page-aligned buffer of its own, then copied into the target's buffers
// (process_vm_writev) and answered with the call's result. Only the real call is
// timed (after any wait its buckets imposed), into the same histogram the library
// fills (ShmSegment::protect). Anything unexpected -- a descriptor that is neither a
// regular file nor a block device (a pipe, a socket: a read that may wait or
// consume), O_DIRECT buffers the kernel might refuse, the target's memory unwritable --
// is not made: the call goes with CONTINUE, untimed, as before. Reads from the page
// cache are made in the loop (RWF_NOWAIT), others by a few worker threads, so that
// concurrent reads of a program stay concurrent and the loop never waits for a disk.
//
// Not read and readv (nor preadv2 at -1): they move the shared file position, and an
// answer can be lost. The kernel drops a reply given while a signal is waking the
// waiting task (SECCOMP_IOCTL_NOTIF_SEND succeeds, the task finds itself interrupted
// and restarts the call): a read made here would have moved the position for nothing,
// and the restart would skip that data (it does: docs/notes/supervisor-measured.md,
// "Lost answers"). A pread's restart reads the same
// bytes again: harmless (the lost answer is then counted and charged twice).
#pragma once
#include <linux/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "abi/calls.h"
#include "supervisor/sv_syscalls.h"

namespace bonsai::ctl {

// The most one timed read moves: a larger request returns a short count at 8 MiB
// (legal for a regular file before EOF, and every caller seen loops: Go's ReadAt and
// ReadFull, glibc's fread, cp, dd; a program that takes a short pread for EOF would see
// one only past 8 MiB).
inline constexpr uint64_t kSvTimedMax = 8u << 20;

// The most worker threads making timed reads at once (concurrent reads beyond it queue).
inline constexpr unsigned kSvTimedWorkers = 8;

// Protected reads of a thread in a row whose answers a signal beat: then one goes with
// CONTINUE (the kernel's read of a file is not interrupted), so that a program with a
// timer faster than its reads (10 kHz against O_DIRECT 64 KiB reads here) progresses.
inline constexpr uint8_t kSvTimedLostMax = 2;

// The most iovec entries of a vectored read made (UIO_MAXIOV; more: the kernel refuses it).
inline constexpr uint32_t kSvTimedMaxIov = 1024;

// The arguments of a timed read, taken from the notification.
struct SvTimedArgs {
  int nr = -1;          // the system call (-1: not a timed read)
  int fd = -1;          // the target's descriptor
  uint64_t addr = 0;    // its buffer, or its iovec array (vectored)
  uint32_t iovcnt = 0;  // vectored: the entries (0: a plain buffer)
  int64_t off = -1;     // the offset (never negative once sv_timed_args took it)
  int rwf = 0;          // preadv2's flags
  uint64_t count = 0;   // asked (a vectored read's total once its iovecs are read)
};

// The arguments of system call `sc` (x86_64, args `a`) as a timed read. @return false
// if it is not one (not a read of the family, a negative offset, too many iovecs).
bool sv_timed_args(const SvSyscall& sc, const __u64 a[6], SvTimedArgs& out) noexcept;

// Whether a descriptor of `mode` (st_mode) can be read by the supervisor for the target:
// a regular file or a block device (data a disk's latency away; a read never waits for
// a writer and consumes nothing another reader would miss).
bool sv_timed_kind_ok(unsigned mode) noexcept;

// O_DIRECT: whether the target's buffers would pass the kernel's alignment check
// (each segment's address and length a multiple of `align`), so that the supervisor's
// aligned buffer does not succeed where the target's call would fail with EINVAL.
struct SvSeg {
  uint64_t base, len;
};
bool sv_timed_direct_ok(const SvSeg* segs, uint32_t n, uint64_t align) noexcept;

// The target's segments cut to `moved` bytes (what process_vm_writev fills). @return the count kept.
uint32_t sv_timed_cut(SvSeg* segs, uint32_t n, uint64_t moved) noexcept;

// One timed read in flight: the request, what the loop needs back to charge it, the result.
struct SvTimedRead {
  uint64_t id = 0;  // the notification
  int lfd = -1;     // its listener
  int tid = 0, tgid = 0;
  int fd_copy = -1;  // owned by the job until it ends
  SvTimedArgs args{};
  // The loop's (Held): the call, its buckets and what they were charged before it went.
  CallId call = CallId::count_;
  uint8_t bucket[2] = {0xff, 0xff};
  uint64_t asked = 0, reserved = 0, view_seq = 0;
  // The result: made (r: bytes or -errno, ns: the real call's own time), or not made
  // (the call goes with CONTINUE). A worker answers a read it made itself (the target
  // waits for one thread's wake-up, not two): answered 1, or 0 when the notification
  // was gone (interrupted by a signal: the call restarts as a new one); -1: not
  // answered yet.
  bool made = false;
  int8_t answered = -1;
  int64_t r = 0;
  uint64_t ns = 0;
};

// Answers the notification of the read `t` made, with its result. @return false if it
// was gone.
bool sv_timed_answer(const SvTimedRead& t) noexcept;

// A buffer and segment list of one thread's reads (the loop's, each worker's).
struct SvTimedScratch {
  std::vector<SvSeg> segs;
  void* buf = nullptr;  // page-aligned (mmap), grown as needed, at most kSvTimedMax
  size_t len = 0;
  uint32_t nsegs = 0;  // of `segs`, those the last read made fills (cut to what it moved)
  SvTimedScratch() = default;
  SvTimedScratch(const SvTimedScratch&) = delete;
  SvTimedScratch& operator=(const SvTimedScratch&) = delete;
  ~SvTimedScratch();
};

enum class SvTimedOutcome { Made, NotMade, Blocks };

// Delivers the read `t` made (its data in `sc`): copies it into the target's buffers and
// answers the notification (answered 1, or 0 when it was gone); the target's memory
// unwritable: not made (nothing answered: the call goes with CONTINUE). A worker delivers with
// `check_valid` and holds SvTimedPool::mem_mu, which the loop holds while it receives a
// notification: a call interrupted while a worker made it restarts as a new
// notification, and the worker must never write into the target's memory once that
// one may have been answered (the program has moved on: a 64 KiB pread loop under a
// 10 kHz interval timer got wrong data before). Inside the lock, a notification found
// valid cannot have a restart received yet, so the write lands before the restarted
// call is answered.
void sv_timed_deliver(SvTimedRead& t, const SvTimedScratch& sc, bool check_valid) noexcept;

// The copy into the target's buffers alone. @return false unless all of it went.
bool sv_timed_copy_out(const SvTimedRead& t, const SvTimedScratch& sc) noexcept;

// Makes the read `t` into `sc` (delivered by sv_timed_deliver): fills made, r, ns
// (Made), or leaves nothing changed (NotMade: the call goes
// with CONTINUE). `nowait` (the loop's thread, which must not wait for a disk): the read
// is tried with RWF_NOWAIT and kept only if the page cache answered it whole (or up to
// the end of the file); else Blocks: a worker makes it, without RWF_NOWAIT. Closes nothing.
SvTimedOutcome sv_timed_make(SvTimedRead& t, SvTimedScratch& sc, bool nowait) noexcept;

// The worker threads. The loop submits jobs and polls `event_fd()`; done() hands back
// the finished ones (made or not) for it to charge and answer.
class SvTimedPool {
 public:
  SvTimedPool() = default;
  ~SvTimedPool();
  SvTimedPool(const SvTimedPool&) = delete;
  SvTimedPool& operator=(const SvTimedPool&) = delete;
  // @return false (nothing queued, `t` still the caller's) if no worker can run.
  bool submit(const SvTimedRead& t);
  // The finished jobs since the last call: those made answered, their descriptors closed;
  // those not made with their descriptors open (the caller's to close).
  void done(std::vector<SvTimedRead>& out);
  int event_fd() const { return efd_; }
  // Held by the loop while it receives a notification, by a worker while it delivers.
  std::mutex& mem_mu() { return mem_mu_; }
  size_t in_flight() const { return in_flight_; }
  // Stops the workers once the queued jobs are made (the loop ends).
  void stop();

 private:
  void work();
  std::mutex mu_;
  std::mutex mem_mu_;
  std::condition_variable cv_;
  std::deque<SvTimedRead> queue_;
  std::vector<SvTimedRead> finished_;
  std::vector<std::thread> threads_;
  unsigned idle_ = 0;
  bool stopping_ = false;
  int efd_ = -1;
  size_t in_flight_ = 0;  // the loop's count (submitted, not handed back)
};

}  // namespace bonsai::ctl
