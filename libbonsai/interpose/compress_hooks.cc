// SPDX-License-Identifier: MIT
// Glue between the wrappers and libbonsai/compress: configuration (own constructor),
// the fd table, classification of sockets, framed data calls with wire-byte
// limiting and accounting of application and wire bytes, and the compression stats line.
// Runs inside the host process: no allocation after set-up, errno preserved on success.
#include "interpose/compress_hooks.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "compress/compress_config.h"
#include "compress/conn_pool.h"
#include "interpose/real.h"
#include "interpose/wrap.h"
#include "log/blog.h"
#include "log/out_file.h"
#include "sys/clock.h"
#include "sys/raw_syscall.h"

namespace bonsai::compress {

constinit bool g_tx_on = false;
constinit bool g_rx_on = false;
constinit bool g_on = false;

namespace {

constinit CompressConfig g_cfg{};
constinit char g_stats_path[kOutPathMax] = {};  // copied at start-up (nginx rewrites its environment)

ssize_t io_sendmsg(int fd, const msghdr* m, int f) { return real::sendmsg(fd, m, f); }
ssize_t io_recv(int fd, void* b, size_t n, int f) { return real::recv(fd, b, n, f); }
int io_poll(pollfd* p, nfds_t n, int t) { return poll_real(p, n, t); }
constexpr IoOps kRealIo{io_sendmsg, io_recv, io_poll, mono_ns};

// ---- wire meter: byte limits see wire bytes ----
struct Meter {
  Ticket t;
  size_t chunk;
};
size_t meter_allow(void* ctx, size_t want) {
  auto* m = static_cast<Meter*>(ctx);
  ticket_wait(m->t, false);  // under the connection lock: never a cancellation point
  return want < m->chunk ? want : m->chunk;
}
void meter_charge(void* ctx, ssize_t moved) { ticket_charge(static_cast<Meter*>(ctx)->t, moved); }

WireMeter meter_for(Meter& m, CallId id, int fd, bool* limited) {
  *limited = limiter_active();
  if (!*limited) return WireMeter{nullptr, nullptr, nullptr};
  m.t = ticket_for(id, fd);
  m.chunk = ticket_chunk(m.t);
  return WireMeter{meter_allow, meter_charge, &m};
}

// Counts the wire bytes of a framed call next to its application bytes (ticket_count).
void count_wire(const Ticket& t, uint64_t wire) {
  ProcessCounters* pc = g_limiter.counters;
  if (pc && wire) pc->wire_bytes[static_cast<size_t>(t.call)].fetch_add(wire, std::memory_order_relaxed);
}

// A connection's lock is held while a frame is written or read, which may wait in
// the limiter or block in send/recv. So cancellation is off while it is held (a
// cancelled holder would leave it locked for good; the cancel is acted on at the
// next cancellation point), and a signal handler re-entering on the holding thread
// gets EINTR instead of a deadlock.
// A record retired meanwhile (its descriptor closed) is released by the last unlock.
struct ConnLock {
  Conn* c;
  pthread_mutex_t* mu;
  std::atomic<unsigned long>* owner;
  int old_cancel;
};

bool conn_lock(ConnLock& l, Conn* c, bool tx) {
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

void conn_unlock(ConnLock& l) {
  l.owner->store(0, std::memory_order_relaxed);
  pthread_mutex_unlock(l.mu);
  conn_unlocked(l.c);
  int ignored;
  pthread_setcancelstate(l.old_cancel, &ignored);
}

void after_fork_in_child() {
  fd_table_after_fork();
  pool_after_fork();
}

// A Conn* state word (not unknown, plain or a reset mark).
Conn* conn_of(uintptr_t st) { return st > kFdPlain && !fd_is_reset(st) ? reinterpret_cast<Conn*>(st) : nullptr; }

// Forgets what was recorded for fd if it is still `st` (the number no longer holds
// that socket, or was closed): a Conn is retired.
void drop_state(int fd, uintptr_t st) {
  FdSlot* slot = fd_slot(fd);
  if (!slot || !slot->st.compare_exchange_strong(st, kFdUnknown, std::memory_order_acq_rel)) return;
  if (Conn* c = conn_of(st)) conn_retire(c);
}

// Records `to` for fd if its state is still `from`. @return success.
bool set_state(FdSlot* slot, uintptr_t from, uintptr_t to) {
  return slot && slot->st.compare_exchange_strong(from, to, std::memory_order_acq_rel);
}

// @return true if fd still holds the socket a reset mark was recorded for.
bool reset_holds(int fd, uintptr_t st) {
  uint64_t dev, ino;
  return socket_identity(fd, &dev, &ino) && fd_reset_mark(ino) == st;
}

// A framed stream the library cannot decode for want of memory: the connection is
// reset (shut down both ways; every read on it fails with ECONNRESET) and logged.
// Never are its frames handed to the application. @return true (rx_framed's answer).
bool reset_framed(int fd, uintptr_t st, const char* why) {
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

bool is_tcp(int fd, bool* nonblocking) {
  int type = 0;
  socklen_t len = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return false;
  sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &sl) != 0) return false;
  if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6) return false;
  if (nonblocking) *nonblocking = fcntl(fd, F_GETFL) & O_NONBLOCK;
  return true;
}

// Binds a new connected socket: a sending half if the peer is a configured
// destination and the socket blocks (non-blocking ones pass through uncompressed).
// Whatever was recorded for the number is stale: it holds a new socket (an
// accepted one is in no epoll set yet).
void bind_socket(int fd, const sockaddr* peer, socklen_t plen, bool accepted) {
  if (FdSlot* slot = fd_slot(fd)) {
    uintptr_t old = slot->st.exchange(kFdUnknown, std::memory_order_acq_rel);
    if (accepted) slot->epfd.store(0, std::memory_order_relaxed);
    if (Conn* c = conn_of(old)) conn_retire(c);
  }
  bool nonblocking = false;
  if (!g_tx_on || !peer || !dest_match(g_cfg, peer, plen) || !is_tcp(fd, &nonblocking) || nonblocking) return;
  FdSlot* slot = fd_slot_make(fd);
  Conn* c = slot ? conn_acquire(fd) : nullptr;
  if (!c) {
    BONSAI_LOG_ONCE(LogLevel::Warn, "compression: no memory for another connection; connection not compressed");
    return;
  }
  if (!conn_tx_enable(c, &g_cfg.levels, g_cfg.policy)) {
    BONSAI_LOG_ONCE(LogLevel::Warn, "compression: no memory for a workspace; connection not compressed");
    conn_retire(c);
    return;
  }
  if (!set_state(slot, kFdUnknown, reinterpret_cast<uintptr_t>(c))) conn_retire(c);  // closed meanwhile
}

void stats_write() {
  if (!g_on) return;
  ConnTotals t;
  pool_totals(t);
  char buf[512];
  int n = std::snprintf(buf, sizeof buf,
                        "{\"pid\":%d,\"tx_app_bytes\":%llu,\"tx_wire_bytes\":%llu,\"rx_app_bytes\":%llu,"
                        "\"rx_wire_bytes\":%llu,\"frames\":{\"raw\":%llu,\"lz4\":%llu,\"zstd\":%llu},\"level_chunks\":[",
                        static_cast<int>(getpid()), (unsigned long long)t.tx_app, (unsigned long long)t.tx_wire,
                        (unsigned long long)t.rx_app, (unsigned long long)t.rx_wire, (unsigned long long)t.frames[0],
                        (unsigned long long)t.frames[1], (unsigned long long)t.frames[2]);
  for (unsigned i = 0; i < g_cfg.levels.count && n > 0 && n < 480; ++i)
    n += std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), "%s%llu", i ? "," : "",
                       (unsigned long long)t.level_chunks[i]);
  if (n <= 0 || n > 500) return;
  n += std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), "]}\n");
  blog(LogLevel::Info, "compression: tx %llu app -> %llu wire bytes, rx %llu wire -> %llu app bytes",
       (unsigned long long)t.tx_app, (unsigned long long)t.tx_wire, (unsigned long long)t.rx_wire,
       (unsigned long long)t.rx_app);
  if (!g_stats_path[0]) return;
  out_file_append("BONSAI_COMPRESS_STATS", g_stats_path, buf, static_cast<size_t>(n));  // log/out_file.h
}

__attribute__((constructor(102))) void compress_constructor() {
  int saved = errno;
  if (config_from_env(g_cfg)) {
    // The descriptor table and the connection records are mapped as they are needed.
    out_path_copy("BONSAI_COMPRESS_STATS", std::getenv("BONSAI_COMPRESS_STATS"), g_stats_path);
    g_tx_on = g_cfg.nto > 0;
    g_rx_on = g_cfg.accept;
    g_on = true;
    pthread_atfork(nullptr, nullptr, after_fork_in_child);
  }
  errno = saved;
}

__attribute__((destructor)) void compress_destructor() { stats_write(); }

}  // namespace

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
  if (!c && !is_tcp(fd, nullptr)) {
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

// ---- framed data calls ----

ssize_t tx_send(int fd, const iovec* v, int cnt, int flags, CallId id) noexcept {
  Conn* c = conn_of(fd_state(fd));
  if (!c || (flags & MSG_OOB)) {  // closed meanwhile / urgent data: not part of the stream
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(v);
    msg.msg_iovlen = static_cast<size_t>(cnt);
    return real::sendmsg(fd, &msg, flags);
  }
  Meter meter;
  bool limited;
  WireMeter m = meter_for(meter, id, fd, &limited);
  int saved = errno;
  ConnLock lock;
  if (!conn_lock(lock, c, true)) return -1;
  if (c->fd.load(std::memory_order_acquire) != fd) {  // closed and recycled meanwhile
    conn_unlock(lock);
    errno = EBADF;
    return -1;
  }
  uint64_t wire0 = c->tx.wire_bytes;
  ssize_t r = tx_write(c->tx, kRealIo, m, fd, v, cnt, flags);
  uint64_t wire = c->tx.wire_bytes - wire0;
  conn_unlock(lock);
  if (limited) ticket_count(meter.t, r), count_wire(meter.t, wire);
  if (r >= 0) errno = saved;
  return r;
}

ssize_t tx_send1(int fd, const void* b, size_t n, int flags, CallId id) noexcept {
  if (flags & MSG_OOB) return real::send(fd, b, n, flags);  // urgent data is not part of the stream
  iovec v{const_cast<void*>(b), n};
  return tx_send(fd, &v, 1, flags, id);
}

ssize_t tx_sendfile(int out, int in, off64_t* off, size_t n, CallId id) noexcept {
  Conn* c = conn_of(fd_state(out));
  size_t want = n < kMaxFrameRaw ? n : kMaxFrameRaw;
  if (want == 0) return 0;
  if (!c) {  // closed meanwhile
    errno = EBADF;
    return -1;
  }
  ConnLock lock;  // file_buf is the connection's
  if (!conn_lock(lock, c, true)) return -1;
  if (c->fd.load(std::memory_order_acquire) != out) {
    conn_unlock(lock);
    errno = EBADF;
    return -1;
  }
  ssize_t got = off ? real::pread64(in, c->file_buf, want, *off) : real::read(in, c->file_buf, want);
  ssize_t r = got;
  if (got > 0) {
    Meter meter;
    bool limited;
    WireMeter m = meter_for(meter, id, out, &limited);
    iovec v{c->file_buf, static_cast<size_t>(got)};
    uint64_t wire0 = c->tx.wire_bytes;
    r = tx_write(c->tx, kRealIo, m, out, &v, 1, 0);
    if (limited) ticket_count(meter.t, r), count_wire(meter.t, c->tx.wire_bytes - wire0);
    if (r > 0 && off) *off += r;
  }
  conn_unlock(lock);
  return r;
}

ssize_t rx_recv(int fd, const iovec* v, int cnt, int flags, CallId id) noexcept {
  Conn* c = conn_of(fd_state(fd));
  if (!c) {  // reset (a framed stream the library could not decode), or closed meanwhile
    errno = ECONNRESET;
    return -1;
  }
  Meter meter;
  bool limited;
  WireMeter m = meter_for(meter, id, fd, &limited);
  int saved = errno;
  ConnLock lock;
  if (!conn_lock(lock, c, false)) return -1;
  if (c->fd.load(std::memory_order_acquire) != fd) {
    conn_unlock(lock);
    errno = EBADF;
    return -1;
  }
  uint64_t wire0 = c->rx.wire_bytes;
  ssize_t r = rx_read(c->rx, kRealIo, m, fd, v, cnt, flags);
  uint64_t wire = c->rx.wire_bytes - wire0;
  conn_update_pending(c);
  conn_unlock(lock);
  if (limited) ticket_count(meter.t, r), count_wire(meter.t, wire);
  if (r >= 0) errno = saved;
  return r;
}

ssize_t rx_recv1(int fd, void* b, size_t n, int flags, CallId id) noexcept {
  if (flags & MSG_OOB) return real::recv(fd, b, n, flags);
  iovec v{b, n};
  return rx_recv(fd, &v, 1, flags, id);
}

ssize_t rx_recvmsg(int fd, msghdr* msg, int flags) noexcept {
  if (flags & MSG_OOB) return real::recvmsg(fd, msg, flags);
  ssize_t r = rx_recv(fd, msg->msg_iov, static_cast<int>(msg->msg_iovlen), flags, CallId::recvmsg);
  if (r >= 0) {
    msg->msg_controllen = 0;
    msg->msg_flags = 0;
  }
  return r;
}

// ---- connection life ----

int connect_hooked(int fd, const sockaddr* a, socklen_t l) noexcept {
  int r = wrap::simple<int>(CallId::connect, fd, true, [&] { return real::connect(fd, a, l); }, wrap::moved_none);
  if (r == 0 && a) {
    int saved = errno;
    bind_socket(fd, a, l, false);
    errno = saved;
  }
  return r;
}

int accept_hooked(int fd, sockaddr* a, socklen_t* l, int flags, bool four) noexcept {
  sockaddr_storage peer;
  socklen_t plen = sizeof peer;
  int r = four ? wrap::simple<int>(CallId::accept4, fd, true,
                                   [&] { return real::accept4(fd, reinterpret_cast<sockaddr*>(&peer), &plen, flags); },
                                   wrap::moved_none)
               : wrap::simple<int>(CallId::accept, fd, true,
                                   [&] { return real::accept(fd, reinterpret_cast<sockaddr*>(&peer), &plen); },
                                   wrap::moved_none);
  if (r < 0) return r;
  int saved = errno;
  if (a && l) {  // what accept would have written
    std::memcpy(a, &peer, *l < plen ? *l : plen);
    *l = plen;
  }
  bind_socket(r, reinterpret_cast<sockaddr*>(&peer), plen, true);
  errno = saved;
  return r;
}

void on_close(int fd) noexcept {
  FdSlot* slot = fd_slot(fd);
  if (!slot) return;
  uintptr_t old = slot->st.exchange(kFdUnknown, std::memory_order_acq_rel);
  slot->epfd.store(0, std::memory_order_relaxed);
  if (Conn* c = conn_of(old)) conn_retire(c);
}

// ---- readiness ----

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
    if (n >= max || !c->pending.load(std::memory_order_acquire)) return;
    int fd = c->fd.load(std::memory_order_acquire);
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
  return n;
}

}  // namespace bonsai::compress
