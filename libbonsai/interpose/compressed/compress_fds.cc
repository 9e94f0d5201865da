// SPDX-License-Identifier: MIT
// Compression's per-descriptor state (compress/fd_table.h) as the hooks change it:
// dropping a stale record, resetting a framed stream that cannot be decoded, forgetting
// a closed descriptor (see compress_glue.h).
#include <atomic>
#include <cerrno>
#include <sys/socket.h>

#include "interpose/compressed/compress_glue.h"
#include "interpose/compressed/compress_hooks.h"
#include "log/blog.h"
#include "sys/raw_syscall.h"

namespace bonsai::compress {

void drop_state(int fd, uintptr_t st) noexcept {
  FdSlot* slot = fd_slot(fd);
  if (!slot || !slot->st.compare_exchange_strong(st, kFdUnknown, std::memory_order_acq_rel)) return;
  if (Conn* c = conn_of(st); c && conn_drop_number(c, fd) == Dropped::Last) conn_retire(c);
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
    if (Conn* c = conn_of(st); c && conn_drop_number(c, fd) == Dropped::Last) conn_retire(c);
  return true;  // without a slot the next read finds the frames again and resets again
}

void on_close(int fd) noexcept {
  FdSlot* slot = fd_slot(fd);
  if (!slot) return;
  uintptr_t st = slot->st.load(std::memory_order_acquire);
  if (Conn* c = conn_of(st)) {
    // Another number (a dup) keeps the socket open: it takes the connection over as
    // is. A word naming a record fd does not reach (another socket's now) is stale.
    if (conn_drop_number(c, fd) != Dropped::Last) {
      set_state(slot, st, kFdUnknown);
      slot->epfd.store(0, std::memory_order_relaxed);
      return;
    }
    if (c->tx_pend.load(std::memory_order_acquire)) tx_drain(fd);  // a non-blocking sender's last frame
  }
  uintptr_t old = slot->st.exchange(kFdUnknown, std::memory_order_acq_rel);
  slot->epfd.store(0, std::memory_order_relaxed);
  if (Conn* o = conn_of(old); o && (old == st || conn_drop_number(o, fd) == Dropped::Last)) conn_retire(o);
}

void on_dup(int oldfd, int newfd) noexcept {
  if (newfd < 0 || newfd == oldfd) return;
  int saved = errno;
  FdSlot* slot = fd_slot_make(newfd);
  uintptr_t st = fd_state(oldfd);
  Conn* c = conn_of(st);
  if (slot && c && conn_reaches(c, oldfd) && conn_verify(c, oldfd)) {
    if (conn_add_alias(c, newfd)) {
      slot->st.store(st, std::memory_order_release);
    } else {
      slot->st.store(kFdUnknown, std::memory_order_release);
      static std::atomic<bool> logged{false};
      if (!logged.exchange(true))
        blog(LogLevel::Warn, "compression: more than %u duplicates of one connection; writes through fd %d are not framed",
             kConnAliases, newfd);
    }
  } else if (slot) {
    slot->st.store(kFdUnknown, std::memory_order_release);  // what the number held is gone
  }
  errno = saved;
}

}  // namespace bonsai::compress
