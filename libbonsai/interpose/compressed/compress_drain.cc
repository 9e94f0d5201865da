// SPDX-License-Identifier: MIT
// The send buffer of non-blocking framed sockets (see compress_hooks.h): sent without
// waiting before a readiness call or a read (tx_flush_now, tx_before_read), drained
// at close, shutdown and exit (tx_drain, tx_drain_all). errno preserved.
#include <cerrno>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#include "compress/tx_send_buffer.h"
#include "compress/tx_stream.h"
#include "interpose/compressed/compress_hooks.h"
#include "interpose/compressed/compress_meter.h"
#include "interpose/real.h"
#include "log/blog.h"
#include "runtime/pace.h"
#include "sys/clock.h"
#include "sys/mutex_try.h"

// tx_flush_now takes the connection lock inside readiness calls: annotated for
// ThreadSanitizer (sys/tsan_annotate.h).
#include "sys/tsan_annotate.h"

namespace bonsai::compress {
namespace {

// How long close/shutdown may wait to send a send buffer: SO_LINGER's time when it
// is on (0: drop the bytes, as an abortive close does), else kDrainMs.
constexpr int kDrainMs = 2000;
int drain_ms(int fd) {
  linger l{};
  socklen_t len = sizeof l;
  if (getsockopt(fd, SOL_SOCKET, SO_LINGER, &l, &len) == 0 && l.l_onoff) return l.l_linger * 1000;
  return kDrainMs;
}

}  // namespace

TxLeft tx_flush_now(int fd, uint64_t* due) noexcept {
  uintptr_t st = fd_state(fd);
  Conn* c = conn_of(st);
  if (!c || !c->tx_pend.load(std::memory_order_acquire)) return TxLeft::None;
  // Never wait for the lock: another thread sending (or this thread, interrupted
  // inside a write by a signal whose handler polls) empties the buffer itself.
  if (mutex_trylock(&c->tx_mu) != 0) return TxLeft::Busy;
  BONSAI_TSAN_ACQUIRE(&c->tx_mu);
  int saved = errno, old_cancel;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_cancel);
  c->tx_owner.store(static_cast<unsigned long>(pthread_self()), std::memory_order_relaxed);
  bool stale = false;
  bool paced = false;
  if (!conn_reaches(c, fd)) {
    stale = true;  // closed and recycled meanwhile
  } else if (!conn_verify(c, fd)) {
    stale = true;
    drop_state(fd, st);  // the number holds something else now (retired: its buffer is dropped)
  } else {
    // As far as the cap allows now: the rest when fd's turn in the bucket comes
    // (readiness calls wake for it), never ahead of the plain sockets queued there.
    Meter meter;
    bool limited;
    WireMeter m = paced_flush(meter, fd, &limited);
    int e = tx_flush(c->tx, kRealIo, m, fd, MSG_DONTWAIT | MSG_NOSIGNAL);
    paced = e == EAGAIN && limited && meter.refused;
    note_tx(c, false);
  }
  bool left = !stale && c->tx_pend.load(std::memory_order_relaxed);
  c->tx_owner.store(0, std::memory_order_relaxed);
  BONSAI_TSAN_RELEASE(&c->tx_mu);
  pthread_mutex_unlock(&c->tx_mu);
  conn_unlocked(c);
  pthread_setcancelstate(old_cancel, &old_cancel);
  if (left && paced) {
    uint64_t d = pace_due(fd, kPaceWrite);
    if (!d) d = mono_ns() + 1000000;  // its place is gone meanwhile (granted, dropped): look again soon
    if (due && (!*due || d < *due)) *due = d;
    errno = saved;
    return TxLeft::Paced;
  }
  errno = saved;
  return left ? TxLeft::Full : TxLeft::None;
}

void tx_before_read(int fd) noexcept {
  // Non-blocking: the read goes on, the bytes go at their turn (a readiness call, a
  // write). Blocking: the read would wait for a reply to them, so they go now.
  TxLeft l = tx_flush_now(fd);
  if ((l != TxLeft::Full && l != TxLeft::Paced) || nonblocking(fd, 0)) return;
  Conn* c = conn_of(fd_state(fd));
  if (!c) return;
  int saved = errno;
  ConnLock lock;
  if (!conn_lock(lock, c, true)) {
    errno = saved;
    return;
  }
  if (conn_reaches(c, fd)) {
    Meter meter;
    bool limited;
    WireMeter m = charge_only(meter, fd, &limited);
    tx_flush(c->tx, kRealIo, m, fd, MSG_NOSIGNAL);  // blocking: the read would block too
    note_tx(c, false);
  }
  conn_unlock(lock);
  errno = saved;
}

namespace {

// Sends fd's send buffer, waiting for the socket until `deadline` (mono ns; 0: by
// SO_LINGER or kDrainMs). `wait_lock` false: skipped if another thread holds the
// connection (at exit, a thread that never comes back may hold it).
void drain(int fd, uint64_t deadline, bool wait_lock) {
  Conn* c = conn_of(fd_state(fd));
  if (!c || !c->tx_pend.load(std::memory_order_acquire)) return;
  int saved = errno;
  ConnLock lock;
  if (!wait_lock) {
    if (mutex_trylock(&c->tx_mu) != 0) return;
    pthread_mutex_unlock(&c->tx_mu);  // free now: take it the usual way (owner, cancel state)
  }
  if (!conn_lock(lock, c, true)) {  // a signal handler closing the socket its thread is writing
    errno = saved;
    return;
  }
  if (conn_reaches(c, fd) && conn_verify(c, fd)) {
    Meter meter;
    bool limited;
    WireMeter m = charge_only(meter, fd, &limited);
    if (!deadline) deadline = mono_ns() + static_cast<uint64_t>(drain_ms(fd)) * 1000000u;
    for (;;) {
      int e = tx_flush(c->tx, kRealIo, m, fd, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (e != EAGAIN) break;
      uint64_t now = mono_ns();
      if (now >= deadline) break;
      pollfd p{fd, POLLOUT, 0};
      uint64_t left_ms = (deadline - now) / 1000000u + 1;
      if (real::poll(&p, 1, static_cast<int>(left_ms)) < 0 && errno != EINTR) break;
    }
    size_t lost = tx_pending(c->tx);
    if (lost) {
      blog(LogLevel::Warn, "compression: %zu buffered bytes of fd %d not sent before close/shutdown/exit (peer not reading)",
           lost, fd);
      tx_disown(c->tx, EPIPE);
    }
    note_tx(c, false);
  }
  conn_unlock(lock);
  errno = saved;
}

}  // namespace

void tx_drain(int fd) noexcept { drain(fd, 0, true); }

void tx_drain_all() noexcept {
  if (g_tx_pending_conns.load(std::memory_order_acquire) <= 0) return;
  uint64_t deadline = mono_ns() + static_cast<uint64_t>(kDrainMs) * 1000000u;  // for all of them together
  pool_each([&](Conn* c) {
    if (c->tx_pend.load(std::memory_order_acquire)) drain(c->fd.load(std::memory_order_acquire), deadline, false);
  });
}

}  // namespace bonsai::compress
