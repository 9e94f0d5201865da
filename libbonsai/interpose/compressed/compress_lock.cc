// SPDX-License-Identifier: MIT
// A connection's lock, held while a frame is written or read, which may wait in the
// limiter or block in send/recv. So cancellation is off while it is held (a cancelled
// holder would leave it locked for good; the cancel is acted on at the next
// cancellation point), and a signal handler re-entering on the holding thread gets
// EINTR instead of a deadlock. A record retired meanwhile (its descriptor closed) is
// released by the last unlock.
#include <cerrno>
#include <pthread.h>

#include "interpose/compressed/compress_glue.h"

namespace bonsai::compress {

bool conn_lock(ConnLock& l, Conn* c, bool tx) noexcept {
  pthread_mutex_t* mu = tx ? &c->tx_mu : &c->rx_mu;
  std::atomic<unsigned long>* owner = tx ? &c->tx_owner : &c->rx_owner;
  unsigned long self = static_cast<unsigned long>(pthread_self());
  if (owner->load(std::memory_order_relaxed) == self) {
    errno = EINTR;
    return false;
  }
  l = {c, mu, owner, 0};
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &l.old_cancel);
  pthread_mutex_lock(mu);
  owner->store(self, std::memory_order_relaxed);
  return true;
}

void conn_unlock(ConnLock& l) noexcept {
  l.owner->store(0, std::memory_order_relaxed);
  pthread_mutex_unlock(l.mu);
  conn_unlocked(l.c);
  int ignored;
  pthread_setcancelstate(l.old_cancel, &ignored);
}

}  // namespace bonsai::compress
