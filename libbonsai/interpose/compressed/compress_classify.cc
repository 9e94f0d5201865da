// SPDX-License-Identifier: MIT
// Which sockets compression frames (see compress_hooks.h): a connected or accepted
// TCP socket whose peer is a configured destination gets a sending half; a socket read
// from with BONSAI_COMPRESS_ACCEPT is classified by a peek at its first bytes (the
// stream header); a recorded socket is verified to be still the one recorded.
#include <cerrno>
#include <fcntl.h>
#include <netinet/in.h>

#include "interpose/compressed/compress_glue.h"
#include "interpose/compressed/compress_hooks.h"
#include "interpose/real.h"
#include "log/blog.h"
#include "runtime/fd_class.h"

namespace bonsai::compress {
namespace {

// Binds a new connected socket: a sending half if the peer is a configured
// destination (blocking or not: a non-blocking socket's writes go through the send
// buffer, see tx_stream.h).
// Whatever was recorded for the number is stale: it holds a new socket (an
// accepted one is in no epoll set yet).
void bind_socket(int fd, const sockaddr* peer, socklen_t plen, bool accepted) {
  if (FdSlot* slot = fd_slot(fd)) {
    uintptr_t old = slot->st.exchange(kFdUnknown, std::memory_order_acq_rel);
    if (accepted) slot->epfd.store(0, std::memory_order_relaxed);
    // (the number may have been a dup of a connection still open by another number)
    if (Conn* c = conn_of(old); c && conn_drop_number(c, fd) == Dropped::Last) conn_retire(c);
  }
  if (!g_tx_on || !peer || !dest_match(g_cfg, peer, plen) || !fd_is_inet_stream(fd, nullptr)) return;
  FdSlot* slot = fd_slot_make(fd);
  Conn* c = slot ? conn_acquire(fd) : nullptr;
  if (!c) {
    BONSAI_LOG_ONCE(LogLevel::Warn, "compression: no memory for another connection; connection not compressed");
    return;
  }
  if (!conn_tx_enable(c, &g_cfg.levels, g_cfg.policy)) {
    BONSAI_LOG_ONCE(LogLevel::Warn, "compression: no memory for a workspace (or BONSAI_COMPRESS_MEM_MIB reached); connection not compressed");
    conn_retire(c);
    return;
  }
  if (!set_state(slot, kFdUnknown, reinterpret_cast<uintptr_t>(c))) conn_retire(c);  // closed meanwhile
}

}  // namespace

// ---- connection life ----

void on_connected(int fd, const sockaddr* a, socklen_t l, int r) noexcept {
  // A non-blocking connect (EINPROGRESS) is bound now: its peer is known, and its
  // first write comes after the event loop saw it connect.
  if (!a || (r != 0 && errno != EINPROGRESS)) return;
  int saved = errno;
  bind_socket(fd, a, l, false);
  errno = saved;
}

void on_accepted(int fd, const sockaddr* peer, socklen_t plen) noexcept {
  int saved = errno;
  bind_socket(fd, peer, plen, true);
  errno = saved;
}

// ---- checks ----

bool tx_check(int fd, uintptr_t st) noexcept {
  if (fd_is_reset(st)) {  // the real call meets a shut-down socket (EPIPE)
    if (!reset_holds(fd, st)) drop_state(fd, st);
    return false;
  }
  Conn* c = conn_of(st);
  if (!c->tx_on.load(std::memory_order_acquire)) return false;
  if (conn_verify(c, fd)) return true;
  drop_state(fd, st);  // the number holds something else now: write to it normally
  return false;
}

namespace {

bool rx_classify(int fd, uintptr_t st) {
  if (fd_is_reset(st)) {
    if (reset_holds(fd, st)) return true;  // rx_recv reports ECONNRESET
    drop_state(fd, st);
    st = kFdUnknown;
  }
  Conn* c = conn_of(st);
  if (c) {
    uint8_t rs = c->rx_state.load(std::memory_order_acquire);
    if (rs == kRxPlain) return false;
    if (!conn_verify(c, fd)) {  // the number holds something else now: classify that
      drop_state(fd, st);
      c = nullptr;
      st = kFdUnknown;
    } else if (rs == kRxFramed) {
      return true;
    }
  }
  if (!c && !fd_is_inet_stream(fd, nullptr)) {
    set_state(fd_slot_make(fd), st, kFdPlain);
    return false;
  }
  uint8_t hdr[kStreamHeaderSize];
  ssize_t r = real::recv(fd, hdr, sizeof hdr, MSG_PEEK | MSG_DONTWAIT);
  if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !(fcntl(fd, F_GETFL) & O_NONBLOCK))
    r = real::recv(fd, hdr, sizeof hdr, MSG_PEEK);  // a blocking socket: its read would wait too
  if (r <= 0) return false;  // nothing yet (or EOF, or an error the real call reports): decide later
  HeaderMatch m = stream_header_match(hdr, static_cast<size_t>(r));
  if (m == HeaderMatch::No) {
    if (c) c->rx_state.store(kRxPlain, std::memory_order_release);
    else set_state(fd_slot_make(fd), st, kFdPlain);
    return false;
  }
  // A framed stream: from here on it is decoded, or the connection is reset.
  FdSlot* slot = fd_slot_make(fd);
  bool mine = !c;
  if (mine) {
    c = slot ? conn_acquire(fd) : nullptr;
    if (!c) return reset_framed(fd, st, "no memory for another compressed connection");
  }
  pthread_mutex_lock(&c->rx_mu);
  bool ok = c->rx_state.load(std::memory_order_relaxed) == kRxFramed || conn_rx_enable(c);
  if (ok) c->rx_state.store(kRxFramed, std::memory_order_release);
  pthread_mutex_unlock(&c->rx_mu);
  conn_unlocked(c);
  if (!ok) {
    if (mine) conn_retire(c);  // never in the table
    return reset_framed(fd, st, "no memory for a decoding workspace");
  }
  if (mine && !set_state(slot, st, reinterpret_cast<uintptr_t>(c))) {
    conn_retire(c);  // another thread classified it first
    uintptr_t now = slot->st.load(std::memory_order_acquire);
    Conn* other = conn_of(now);
    return fd_is_reset(now) || (other && other->rx_state.load(std::memory_order_acquire) == kRxFramed);
  }
  return true;
}

}  // namespace

bool rx_check(int fd, uintptr_t st) noexcept {
  int saved = errno;
  bool framed = rx_classify(fd, st);
  errno = saved;
  return framed;
}

}  // namespace bonsai::compress
