// SPDX-License-Identifier: MIT
// Readiness of framed sockets (see compress_hooks.h): decoded bytes waiting inside the
// library, send buffers holding bytes (their sockets are waited for on the library's
// behalf, POLLOUT is withheld until they are empty), and the epoll registrations that
// let epoll_wait report them (interpose/poll_calls.cc).
#include <cerrno>
#include <poll.h>

#include "interpose/compressed/compress_glue.h"
#include "interpose/compressed/compress_hooks.h"

namespace bonsai::compress {

bool any_rx_pending() noexcept { return g_pending_conns.load(std::memory_order_relaxed) > 0; }

bool fd_rx_pending(int fd) noexcept {
  if (!g_rx_on) return false;
  uintptr_t st = fd_state(fd);
  Conn* c = conn_of(st);
  if (!c || c->rx_state.load(std::memory_order_acquire) != kRxFramed) return false;
  if (!c->pending.load(std::memory_order_acquire)) return false;  // no lock: a reader may be blocked holding it
  if (conn_verify(c, fd)) return true;
  drop_state(fd, st);
  return false;
}

bool any_tx_state() noexcept {
  return g_tx_pending_conns.load(std::memory_order_relaxed) > 0 || g_tx_owed_conns.load(std::memory_order_relaxed) > 0;
}

bool fd_tx_pending(int fd) noexcept {
  if (!g_tx_on) return false;
  Conn* c = conn_of(fd_state(fd));
  return c && c->tx_pend.load(std::memory_order_acquire);
}

void tx_withheld(int fd) noexcept {
  if (Conn* c = conn_of(fd_state(fd))) conn_set_owed(c, true);
}

int epoll_tx_pending(int epfd, int* fd_out, uint64_t* data_out, int max, bool* busy, uint64_t* due) noexcept {
  int n = 0;
  pool_each([&](Conn* c) {
    if (!c->tx_pend.load(std::memory_order_acquire)) return;
    conn_each_number(c, [&](int fd) {  // each number registered with epfd (a dup is one too)
      if (n >= max) return;
      FdSlot* slot = fd_slot(fd);
      if (!slot || slot->st.load(std::memory_order_acquire) != reinterpret_cast<uintptr_t>(c)) return;
      if (slot->epfd.load(std::memory_order_acquire) != epfd) return;
      TxLeft left = tx_flush_now(fd, due);
      if (left == TxLeft::Busy) *busy = true;
      if (left != TxLeft::Full) return;
      fd_out[n] = fd;
      data_out[n] = slot->data;
      ++n;
    });
  });
  return n;
}

int epoll_tx_owed(int epfd, int* fd_out, uint64_t* data_out, int max) noexcept {
  if (g_tx_owed_conns.load(std::memory_order_relaxed) <= 0) return 0;
  int n = 0;
  pool_each([&](Conn* c) {
    if (!c->owe_out.load(std::memory_order_acquire) || c->tx_pend.load(std::memory_order_acquire)) return;
    conn_each_number(c, [&](int fd) {
      if (n >= max) return;
      FdSlot* slot = fd_slot(fd);
      if (!slot || slot->st.load(std::memory_order_acquire) != reinterpret_cast<uintptr_t>(c)) return;
      if (slot->epfd.load(std::memory_order_acquire) != epfd || !(slot->events & POLLOUT)) return;
      if (!conn_set_owed(c, false)) return;  // another thread reported it
      fd_out[n] = fd;
      data_out[n] = slot->data;
      ++n;
    });
  });
  return n;
}

void epoll_note(int epfd, int op, int fd, uint32_t events, uint64_t data) noexcept {
  int saved = errno;
  FdSlot* slot = op == 2 /* EPOLL_CTL_DEL */ ? fd_slot(fd) : fd_slot_make(fd);
  errno = saved;
  if (!slot) return;
  if (op == 2) {
    int32_t e = epfd;
    slot->epfd.compare_exchange_strong(e, 0, std::memory_order_acq_rel);
    return;
  }
  slot->events = events;
  slot->data = data;
  slot->epfd.store(epfd, std::memory_order_release);
}

int epoll_pending(int epfd, uint32_t* ev_out, uint64_t* data_out, int max) noexcept {
  int n = 0;
  pool_each([&](Conn* c) {
    if (!c->pending.load(std::memory_order_acquire)) return;
    conn_each_number(c, [&](int fd) {
      if (n >= max) return;
      FdSlot* slot = fd_slot(fd);
      auto st = reinterpret_cast<uintptr_t>(c);
      if (!slot || slot->st.load(std::memory_order_acquire) != st) return;  // being retired
      if (slot->epfd.load(std::memory_order_acquire) != epfd || !(slot->events & POLLIN)) return;
      if (!conn_verify(c, fd)) {
        drop_state(fd, st);
        return;
      }
      ev_out[n] = POLLIN;
      data_out[n] = slot->data;
      ++n;
    });
  });
  return n;
}

}  // namespace bonsai::compress
