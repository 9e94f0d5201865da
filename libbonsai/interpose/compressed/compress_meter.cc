// SPDX-License-Identifier: MIT
// The wire meter and the helpers the framed data calls share (compress_meter.h).
#include <cerrno>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "interpose/compressed/compress_meter.h"
#include "interpose/real.h"
#include "runtime/limiter_setup.h"
#include "runtime/pace.h"
#include "runtime/ticket_pay.h"
#include "sys/clock.h"
#include "sys/raw_syscall.h"

namespace bonsai::compress {
namespace {

ssize_t io_sendmsg(int fd, const msghdr* m, int f) { return real::sendmsg(fd, m, f); }
ssize_t io_recv(int fd, void* b, size_t n, int f) { return real::recv(fd, b, n, f); }
int io_poll(pollfd* p, nfds_t n, int t) { return real::poll(p, n, t); }

// The meter's callbacks (compress/stream_io.h WireMeter).
size_t meter_allow(void* ctx, size_t want) {
  auto* m = static_cast<Meter*>(ctx);
  size_t allow = want < m->chunk ? want : m->chunk;
  if (m->wait != MeterWait::Wait && m->is_write && m->t.bucket != kNoBucket && !m->t.params.per_call) [[unlikely]] {
    // The small tail of a frame whose credit in hand covers most of it goes with it,
    // its few bytes taken from the bucket at once (ticket_charge settles the deficit):
    // a frame is a quantum and a header, and a place in the queue for the header alone
    // would cost the loop a wake-up per frame (and the bucket the time it wakes late).
    int64_t credit = t_thread.credit_gen == m->t.gen ? t_thread.credit[m->t.bucket] : 0;
    if (credit > 0 && want > static_cast<uint64_t>(credit) && want - static_cast<uint64_t>(credit) <= m->chunk / 8)
      return want;
  }
  if (m->wait != MeterWait::Wait && m->is_write && !ticket_covered(m->t, allow)) [[unlikely]] {
    // As a plain non-blocking write (interpose/wrap.h transfer): what the bucket allows
    // now, or refused with a place in its queue; readiness then follows the place.
    bool cuttable = true;  // a frame's bytes may go in pieces: the send buffer keeps the rest
    int64_t ok = ticket_try_slow(m->t, m->fd, kPaceWrite, true, want, m->chunk, &cuttable);
    if (ok == 0) {
      m->refused = true;
      return 0;
    }
    if (ok > 0) return static_cast<uint64_t>(ok) < allow ? static_cast<size_t>(ok) : allow;
    if (m->wait == MeterWait::Flush) return allow;  // cannot be paced: charged, never waited for here
  }
  ticket_wait(m->t, false, m->is_write ? allow : 0);  // under the connection lock: never a cancellation point
  return allow;
}
void meter_charge(void* ctx, ssize_t moved) { ticket_charge(static_cast<Meter*>(ctx)->t, moved); }
double meter_ahead(void* ctx) { return ticket_ahead(static_cast<Meter*>(ctx)->t); }

// The byte rate of the ticket's bucket (0: none, or a call-rate bucket).
double rate_of(const Ticket& t) {
  if (!t.view || t.bucket >= kMaxRules) return 0;
  const BucketParams& p = t.params;
  if (p.per_call || p.ns_per_unit_q32 == 0) return 0;
  return 1e9 * 4294967296.0 /
         (static_cast<double>(p.ns_per_unit_q32) + static_cast<double>(p.ns_per_unit_hi) * 18446744073709551616.0);
}

// The depth of the ticket's bucket in ns (0: none, or a call-rate bucket).
double depth_of(const Ticket& t) {
  if (!t.view || t.bucket >= kMaxRules) return 0;
  const BucketParams& p = t.params;
  return p.per_call ? 0 : static_cast<double>(p.depth_ns);
}

// charge_only's: allows everything at once.
size_t meter_allow_now(void*, size_t want) { return want; }

}  // namespace

extern constinit const IoOps kRealIo{io_sendmsg, io_recv, io_poll, mono_ns};

WireMeter meter_for(Meter& m, CallId id, int fd, bool* limited, MeterWait wait) {
  *limited = limiter_active();
  if (!*limited) return WireMeter{nullptr, nullptr, nullptr};
  m.t = ticket_for(id, fd);
  m.chunk = ticket_chunk(m.t);
  m.is_write = call_dir(id) == CallDir::Write;
  m.wait = wait;
  m.fd = fd;
  m.refused = false;
  bool capped = m.t.bucket != kNoBucket;
  return WireMeter{meter_allow,
                   meter_charge,
                   &m,
                   capped,
                   capped ? rate_of(m.t) : 0,
                   capped ? meter_ahead : nullptr,
                   capped ? depth_of(m.t) : 0,
                   capped && m.is_write && wait != MeterWait::Wait};
}

void count_wire(const Ticket& t, uint64_t wire) {
  ProcessCounters* pc = g_limiter.counters;
  if (pc && wire) pc->wire_bytes[static_cast<size_t>(t.call)].fetch_add(wire, std::memory_order_relaxed);
}

WireMeter charge_only(Meter& m, int fd, bool* limited) {
  WireMeter w = meter_for(m, CallId::send, fd, limited);
  if (w.allow) w.allow = meter_allow_now;
  return w;
}

WireMeter paced_flush(Meter& m, int fd, bool* limited) { return meter_for(m, CallId::send, fd, limited, MeterWait::Flush); }

bool nonblocking(int fd, int flags) {
  if (flags & MSG_DONTWAIT) return true;
  long fl = raw_syscall3(SYS_fcntl, fd, F_GETFL, 0);
  return fl >= 0 && (fl & O_NONBLOCK);
}

void note_tx(Conn* c, bool refused, bool took) {
  conn_update_tx_pending(c);
  if (refused) conn_set_owed(c, true);
  else if (took && c->owe_out.load(std::memory_order_relaxed)) conn_set_owed(c, false);
}

bool lock_reaching(ConnLock& lock, Conn* c, int fd, bool tx) {
  if (!conn_lock(lock, c, tx)) return false;
  if (conn_reaches(c, fd)) return true;
  conn_unlock(lock);
  errno = EBADF;
  return false;
}

}  // namespace bonsai::compress
