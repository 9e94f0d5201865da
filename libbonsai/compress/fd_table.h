// SPDX-License-Identifier: MIT
// The compression hooks' per-descriptor table: one slot per descriptor number, in
// slabs mmap'd on first need (slab k holds numbers [4096*(2^k-1), 4096*(2^(k+1)-1)) ),
// so it grows with the process's descriptors, to any number, and costs nothing for
// numbers never used. Slabs are never unmapped. Looking a slot up is a few
// instructions and two loads, no lock, no allocation; only making a slab takes a lock.
//
// A slot's state word: kFdUnknown, kFdPlain, a reset mark (the socket's inode, for a
// framed connection the library could not decode: every read fails), or a Conn*.
// State recorded for a socket is only used after checking that the number still
// holds that socket (conn_pool.h: conn_verify), so nothing outlives its descriptor.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace bonsai::compress {

inline constexpr uintptr_t kFdUnknown = 0, kFdPlain = 1;
inline constexpr uintptr_t kFdResetTag = 2;  // low 3 bits; the inode above them

struct FdSlot {
  std::atomic<uintptr_t> st;
  // epoll registration of this number for input (receiving side): epfd 0 = none.
  std::atomic<int32_t> epfd;
  uint32_t events;
  uint64_t data;
  // The FILE fdopen() made on this number (interpose/compressed/compress_stdio.cc), whose bytes
  // its own read/write functions charge; nullptr: none.
  std::atomic<void*> file;
};

inline constexpr unsigned kSlab0Bits = 12;  // slab 0: 4096 numbers
inline constexpr unsigned kFdSlabs = 32 - kSlab0Bits;  // covers every non-negative int

extern constinit std::atomic<FdSlot*> g_fd_slabs[kFdSlabs];

// @return fd's slot, or nullptr if fd < 0 or its slab is not mapped (state unknown).
inline FdSlot* fd_slot(int fd) noexcept {
  if (fd < 0) return nullptr;
  uint64_t x = static_cast<uint64_t>(fd) + (uint64_t{1} << kSlab0Bits);
  unsigned k = static_cast<unsigned>(63 - __builtin_clzll(x)) - kSlab0Bits;
  FdSlot* s = g_fd_slabs[k].load(std::memory_order_acquire);
  return s ? s + (x - (uint64_t{1} << (k + kSlab0Bits))) : nullptr;
}

// The state word of fd (kFdUnknown if it has no slot).
inline uintptr_t fd_state(int fd) noexcept {
  FdSlot* s = fd_slot(fd);
  return s ? s->st.load(std::memory_order_acquire) : kFdUnknown;
}

// @return fd's slot, mapping its slab if needed; nullptr if fd < 0 or out of memory.
FdSlot* fd_slot_make(int fd) noexcept;
// In a fork()ed child: re-initialises the slab lock.
void fd_table_after_fork() noexcept;

inline bool fd_is_reset(uintptr_t st) noexcept { return (st & 7) == kFdResetTag; }
inline uintptr_t fd_reset_mark(uint64_t ino) noexcept { return static_cast<uintptr_t>(ino << 3) | kFdResetTag; }
inline uint64_t fd_reset_ino(uintptr_t st) noexcept { return st >> 3; }

}  // namespace bonsai::compress
