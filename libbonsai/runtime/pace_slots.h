// SPDX-License-Identifier: MIT
// The per-descriptor state of pacing (runtime/pace.h; directions: runtime/pace_dir.h): a descriptor's reservations (one
// per direction), whether it is held, and its epoll registration (so a held direction
// can be taken out of the kernel's interest and put back when due). One table of
// kPaceFds slots, mapped on first use (MAP_NORESERVE: untouched slots cost nothing), and
// a two-level bitmap of the held descriptors, so readiness calls look only at those.
// A slot is changed under its own try-lock (the holder's pid; never waited for long,
// never across a system call other than epoll_ctl). Process memory: a forked child
// inherits a copy, and a lock a parent's thread held at the fork (another pid) is free
// to take in the child.
#pragma once
#include <atomic>
#include <cstdint>

#include "bucket/limits_view.h"
#include "runtime/pace_dir.h"
#include "sys/tsan_annotate.h"

namespace bonsai {

struct PaceReservation {
  uint64_t due_mono;  // this process's CLOCK_MONOTONIC: the place in the queue is due
  int64_t units;      // taken from the bucket, not yet granted
  const LimitsView* view;  // the view it was taken under, at generation `gen`
  uint64_t gen;
  uint8_t bucket;
  bool active;
};

struct PaceSlot {
  std::atomic<int32_t> lock;  // 0, or the pid of the process whose thread holds it
  uint8_t held;           // bit d: direction d has a reservation not yet granted
  uint8_t masked;         // bit d: direction d is out of the kernel's epoll interest
  uint8_t kick;           // bit d: a call in direction d was shortened: an edge-triggered
                          // loop waits for a new edge, made (EPOLL_CTL_MOD) once it is due
  PaceReservation res[2];
  uint64_t last_place[2];  // this process's clock: when direction d last took a place
  int32_t epfd;           // its epoll registration (0: none known)
  uint32_t events;        // as the application registered them
  uint64_t data;
};

// The slot of `fd`, mapping the table on first use; nullptr if out of range or unmappable.
PaceSlot* pace_slot(int fd) noexcept;
// The slot of `fd` if the table exists (never maps it).
PaceSlot* pace_slot_if(int fd) noexcept;

bool pace_lock(PaceSlot& s) noexcept;  // false: busy for too long (a signal handler's call)
// Slots are locked inside readiness calls too: annotated for ThreadSanitizer (sys/tsan_annotate.h).
inline void pace_unlock(PaceSlot& s) noexcept {
  BONSAI_TSAN_RELEASE(&s.lock);
  s.lock.store(0, std::memory_order_release);
}

// Held descriptors: marked when a reservation is made, cleared when it is granted,
// dropped, or its descriptor closed.
extern std::atomic<int> g_pace_held;
void pace_mark_held(int fd) noexcept;
void pace_clear_held(int fd) noexcept;
// Calls `f(fd)` for each descriptor marked held (a snapshot; may include ones cleared meanwhile).
template <typename F>
void pace_each_held(F&& f) noexcept;

// Event bits (poll's POLLIN/POLLOUT family, the same values as epoll's) of direction `d`.
unsigned pace_dir_events(unsigned d) noexcept;

// ---- implementation of the template ----
inline constexpr int kHeldWords = kPaceFds / 64;
extern std::atomic<uint64_t> g_held_bits[kHeldWords];
extern std::atomic<uint64_t> g_held_summary[kHeldWords / 64];

template <typename F>
void pace_each_held(F&& f) noexcept {
  for (int s = 0; s < kHeldWords / 64; ++s) {
    uint64_t sw = g_held_summary[s].load(std::memory_order_acquire);
    while (sw) {
      int w = s * 64 + __builtin_ctzll(sw);
      sw &= sw - 1;
      uint64_t bits = g_held_bits[w].load(std::memory_order_acquire);
      while (bits) {
        int fd = w * 64 + __builtin_ctzll(bits);
        bits &= bits - 1;
        f(fd);
      }
    }
  }
}

}  // namespace bonsai
