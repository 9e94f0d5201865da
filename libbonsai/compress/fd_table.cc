// SPDX-License-Identifier: MIT
// The per-descriptor table's slabs (see fd_table.h).
#include "compress/fd_table.h"

#include <pthread.h>
#include <sys/mman.h>

namespace bonsai::compress {

constinit std::atomic<FdSlot*> g_fd_slabs[kFdSlabs] = {};

namespace {
constinit pthread_mutex_t g_slab_mu = PTHREAD_MUTEX_INITIALIZER;
}

FdSlot* fd_slot_make(int fd) noexcept {
  if (fd < 0) return nullptr;
  if (FdSlot* s = fd_slot(fd)) return s;
  uint64_t x = static_cast<uint64_t>(fd) + (uint64_t{1} << kSlab0Bits);
  unsigned k = static_cast<unsigned>(63 - __builtin_clzll(x)) - kSlab0Bits;
  pthread_mutex_lock(&g_slab_mu);
  if (!g_fd_slabs[k].load(std::memory_order_acquire)) {
    size_t bytes = sizeof(FdSlot) << (k + kSlab0Bits);
    // Zero pages on demand: a slab costs memory only where numbers are used.
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) g_fd_slabs[k].store(static_cast<FdSlot*>(p), std::memory_order_release);
  }
  pthread_mutex_unlock(&g_slab_mu);
  return fd_slot(fd);
}

void fd_table_after_fork() noexcept { pthread_mutex_init(&g_slab_mu, nullptr); }

}  // namespace bonsai::compress
