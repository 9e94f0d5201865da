// SPDX-License-Identifier: MIT
// Compression's per-descriptor state (compress/fd_table.h) as the hooks change it:
// dropping a stale record, resetting a framed stream that cannot be decoded, forgetting
// a closed descriptor (see compress_glue.h).
#include <atomic>
#include <sys/socket.h>

#include "interpose/compress_glue.h"
#include "interpose/compress_hooks.h"
#include "log/blog.h"
#include "sys/raw_syscall.h"

namespace bonsai::compress {

void drop_state(int fd, uintptr_t st) noexcept {
  FdSlot* slot = fd_slot(fd);
  if (!slot || !slot->st.compare_exchange_strong(st, kFdUnknown, std::memory_order_acq_rel)) return;
  if (Conn* c = conn_of(st)) conn_retire(c);
}

bool reset_holds(int fd, uintptr_t st) noexcept {
  uint64_t dev, ino;
  return socket_identity(fd, &dev, &ino) && fd_reset_mark(ino) == st;
}

bool reset_framed(int fd, uintptr_t st, const char* why) noexcept {
  raw_syscall3(SYS_shutdown, fd, SHUT_RDWR, 0);
  static std::atomic<unsigned> logged{0};
  if (logged.fetch_add(1, std::memory_order_relaxed) < 8)
    blog(LogLevel::Error, "compression: %s; connection on fd %d reset", why, fd);
  uint64_t dev, ino;
  FdSlot* slot = fd_slot_make(fd);
  if (slot && socket_identity(fd, &dev, &ino) && set_state(slot, st, fd_reset_mark(ino)))
    if (Conn* c = conn_of(st)) conn_retire(c);
  return true;  // without a slot the next read finds the frames again and resets again
}

void on_close(int fd) noexcept {
  FdSlot* slot = fd_slot(fd);
  if (!slot) return;
  if (Conn* c = conn_of(slot->st.load(std::memory_order_acquire)); c && c->tx_pend.load(std::memory_order_acquire))
    tx_drain(fd);  // a non-blocking sender's last frame: sent before the socket goes
  uintptr_t old = slot->st.exchange(kFdUnknown, std::memory_order_acq_rel);
  slot->epfd.store(0, std::memory_order_relaxed);
  if (Conn* c = conn_of(old)) conn_retire(c);
}

}  // namespace bonsai::compress
