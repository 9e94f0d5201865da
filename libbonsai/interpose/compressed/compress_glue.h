// SPDX-License-Identifier: MIT
// What the interpose/compressed/compress_*.cc files share among themselves (the wrappers see only
// compress_hooks.h): the configuration, the per-descriptor state words, the connection
// lock and the stats line. Each block names the file that defines it.
#pragma once
#include <atomic>
#include <cstdint>
#include <pthread.h>

#include "compress/compress_config.h"
#include "compress/conn_pool.h"
#include "compress/fd_table.h"

namespace bonsai::compress {

// ---- compress_setup.cc: the configuration (BONSAI_COMPRESS_*), read at set-up ----
extern constinit CompressConfig g_cfg;

// ---- compress_fds.cc: a descriptor's state word (compress/fd_table.h) ----
// The Conn* of a state word (not unknown, plain or a reset mark), or nullptr.
inline Conn* conn_of(uintptr_t st) noexcept {
  return st > kFdPlain && !fd_is_reset(st) ? reinterpret_cast<Conn*>(st) : nullptr;
}
// Records `to` for fd if its state is still `from`. @return success.
inline bool set_state(FdSlot* slot, uintptr_t from, uintptr_t to) noexcept {
  return slot && slot->st.compare_exchange_strong(from, to, std::memory_order_acq_rel);
}
// Forgets what was recorded for fd if it is still `st` (the number no longer holds
// that socket, or was closed): a Conn is retired.
void drop_state(int fd, uintptr_t st) noexcept;
// @return true if fd still holds the socket a reset mark was recorded for.
bool reset_holds(int fd, uintptr_t st) noexcept;
// A framed stream the library cannot decode for want of memory: the connection is
// reset (shut down both ways; every read on it fails with ECONNRESET) and logged.
// Never are its frames handed to the application. @return true (rx_framed's answer).
bool reset_framed(int fd, uintptr_t st, const char* why) noexcept;

// ---- compress_lock.cc: a connection's lock for one frame ----
struct ConnLock {
  Conn* c;
  pthread_mutex_t* mu;
  std::atomic<unsigned long>* owner;
  int old_cancel;
};
// Takes c's sending (tx) or receiving lock. @return false with errno EINTR when this
// thread already holds it (a signal handler re-entering).
bool conn_lock(ConnLock& l, Conn* c, bool tx) noexcept;
void conn_unlock(ConnLock& l) noexcept;

// ---- compress_stats.cc: the BONSAI_COMPRESS_STATS line ----
void stats_setup() noexcept;    // set-up: remembers the file
void stats_at_exit() noexcept;  // logs the totals, appends the line

}  // namespace bonsai::compress
