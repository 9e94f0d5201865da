// SPDX-License-Identifier: MIT
// The table of compressed connections (see conn_pool.h): records in slabs, the free
// list, a record's numbers (owner and aliases), retirement and release, the pending
// counts and the totals. Only connect/accept/close, a connection's first use and a
// retirement take the pool lock; reads and writes never do. A record's workspaces:
// conn_workspace.cc.
#include "compress/conn_pool.h"

#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compress/calibrator.h"
#include "compress/conn_workspace.h"
#include "sys/mutex_try.h"
#include "sys/raw_syscall.h"

namespace bonsai::compress {

constinit std::atomic<Conn*> g_conn_slabs[kConnSlabs] = {};
constinit std::atomic<int> g_pending_conns{0};
constinit std::atomic<int> g_tx_pending_conns{0};
constinit std::atomic<int> g_tx_owed_conns{0};

namespace {
constinit pthread_mutex_t g_pool_mu = PTHREAD_MUTEX_INITIALIZER;
constinit Conn* g_free = nullptr;  // under g_pool_mu
constinit unsigned g_nslabs = 0;   // under g_pool_mu
constinit ConnTotals g_closed{};

void* map(size_t n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void add_totals(ConnTotals& t, const Conn& c) {
  t.tx_app += c.tx.app_bytes;
  t.tx_wire += c.tx.wire_bytes;
  t.rx_app += c.rx.app_bytes;
  t.rx_wire += c.rx.wire_bytes;
  for (unsigned i = 0; i < kMethodCount; ++i) t.frames[i] += c.tx.frames[i];
  for (unsigned i = 0; i < kMaxLevels; ++i) t.level_chunks[i] += c.tx.level_chunks[i];
}

void clear_counts(Conn& c) {
  c.tx.app_bytes = c.tx.wire_bytes = c.rx.app_bytes = c.rx.wire_bytes = 0;
  std::memset(c.tx.frames, 0, sizeof c.tx.frames);
  std::memset(c.tx.level_chunks, 0, sizeof c.tx.level_chunks);
}

// Maps the next slab and puts its records on the free list (under g_pool_mu).
bool grow() {
  if (g_nslabs >= kConnSlabs) return false;
  size_t n = size_t{kConnSlab0} << g_nslabs;
  auto* s = static_cast<Conn*>(map(sizeof(Conn) * n));
  if (!s) return false;
  for (size_t i = n; i-- > 0;) {
    s[i].fd.store(-1, std::memory_order_relaxed);
    for (auto& a : s[i].alias) a.store(-1, std::memory_order_relaxed);
    pthread_mutex_init(&s[i].tx_mu, nullptr);
    pthread_mutex_init(&s[i].rx_mu, nullptr);
    s[i].next_free = g_free;
    g_free = &s[i];
  }
  g_conn_slabs[g_nslabs++].store(s, std::memory_order_release);
  return true;
}
}  // namespace

bool socket_identity(int fd, uint64_t* dev, uint64_t* ino) noexcept {
  struct stat st;
  if (raw_syscall3(SYS_fstat, fd, reinterpret_cast<long>(&st), 0) != 0 || !S_ISSOCK(st.st_mode)) return false;
  *dev = st.st_dev;
  *ino = st.st_ino;
  return true;
}

bool conn_verify(const Conn* c, int fd) noexcept {
  uint64_t dev, ino;
  return socket_identity(fd, &dev, &ino) && dev == c->dev && ino == c->ino;
}

Conn* conn_acquire(int fd) noexcept {
  uint64_t dev, ino;
  if (!socket_identity(fd, &dev, &ino)) return nullptr;
  pthread_mutex_lock(&g_pool_mu);
  Conn* c = g_free;
  if (!c && grow()) c = g_free;
  if (c) {
    g_free = c->next_free;
    c->next_free = nullptr;
    c->rx_state.store(kRxUnknown, std::memory_order_relaxed);
    c->tx_on.store(false, std::memory_order_relaxed);
    c->pending.store(false, std::memory_order_relaxed);
    c->tx_pend.store(false, std::memory_order_relaxed);
    conn_set_owed(c, false);
    c->retired.store(false, std::memory_order_relaxed);
    c->dev = dev;
    c->ino = ino;
    clear_counts(*c);
    for (auto& a : c->alias) a.store(-1, std::memory_order_relaxed);
    c->fd.store(fd, std::memory_order_release);
  }
  pthread_mutex_unlock(&g_pool_mu);
  return c;
}

// Aliases change under the pool lock: two numbers of one socket closed at once by two
// threads must leave exactly one of them to retire the record.
bool conn_add_alias(Conn* c, int dup) noexcept {
  pthread_mutex_lock(&g_pool_mu);
  bool added = false;
  if (c->fd.load(std::memory_order_relaxed) >= 0 && !c->retired.load(std::memory_order_relaxed)) {
    for (auto& a : c->alias) {
      if (a.load(std::memory_order_relaxed) < 0) {
        a.store(dup, std::memory_order_release);
        added = true;
        break;
      }
    }
  }
  pthread_mutex_unlock(&g_pool_mu);
  return added;
}

Dropped conn_drop_number(Conn* c, int fd) noexcept {
  pthread_mutex_lock(&g_pool_mu);
  Dropped d = Dropped::Elsewhere;
  for (auto& a : c->alias) {
    if (a.load(std::memory_order_relaxed) == fd) {
      a.store(-1, std::memory_order_release);
      d = Dropped::Kept;  // an alias went: the owner stays
    }
  }
  if (d == Dropped::Elsewhere && fd >= 0 && c->fd.load(std::memory_order_relaxed) == fd) {
    d = Dropped::Last;
    for (auto& a : c->alias) {
      int n = a.load(std::memory_order_relaxed);
      if (n >= 0) {  // the first alias takes over as the owner
        a.store(-1, std::memory_order_release);
        c->fd.store(n, std::memory_order_release);
        d = Dropped::Kept;
        break;
      }
    }
  }
  pthread_mutex_unlock(&g_pool_mu);
  return d;
}

void conn_retire(Conn* c) noexcept {
  c->retired.store(true, std::memory_order_seq_cst);
  conn_release_if_idle(c);
}

// Releases a retired record if no thread holds its locks; a holder calls this
// again after unlocking (conn_unlocked), so exactly one caller releases it.
void conn_release_if_idle(Conn* c) noexcept {
  if (mutex_trylock(&c->tx_mu) != 0) return;
  if (mutex_trylock(&c->rx_mu) != 0) {
    pthread_mutex_unlock(&c->tx_mu);
    return;
  }
  bool mine = c->retired.exchange(false, std::memory_order_acq_rel);
  if (mine) {
    if (c->pending.exchange(false)) g_pending_conns.fetch_sub(1, std::memory_order_relaxed);
    if (c->tx_pend.exchange(false)) g_tx_pending_conns.fetch_sub(1, std::memory_order_relaxed);
    conn_set_owed(c, false);
    c->tx.pend_len = c->tx.pend_off = 0;  // what close could not send is dropped (logged there)
    conn_give_back_grown(*c);
    pthread_mutex_lock(&g_pool_mu);
    add_totals(g_closed, *c);
    clear_counts(*c);
    c->tx_on.store(false, std::memory_order_relaxed);
    c->rx_state.store(kRxUnknown, std::memory_order_relaxed);
    for (auto& a : c->alias) a.store(-1, std::memory_order_relaxed);
    c->fd.store(-1, std::memory_order_release);
    c->next_free = g_free;
    g_free = c;
    pthread_mutex_unlock(&g_pool_mu);
  }
  pthread_mutex_unlock(&c->rx_mu);
  pthread_mutex_unlock(&c->tx_mu);
}

void conn_update_pending(Conn* c) noexcept {
  bool now = rx_pending(c->rx);
  if (now == c->pending.load(std::memory_order_relaxed)) return;
  c->pending.store(now, std::memory_order_release);
  g_pending_conns.fetch_add(now ? 1 : -1, std::memory_order_relaxed);
}

void conn_update_tx_pending(Conn* c) noexcept {
  bool now = tx_pending(c->tx) > 0;
  if (now == c->tx_pend.load(std::memory_order_relaxed)) return;
  c->tx_pend.store(now, std::memory_order_release);
  g_tx_pending_conns.fetch_add(now ? 1 : -1, std::memory_order_relaxed);
}

void pool_after_fork() noexcept {
  pthread_mutex_init(&g_pool_mu, nullptr);
  g_tx_pending_conns.store(0, std::memory_order_relaxed);
  calibrator_after_fork();
  for (unsigned k = 0; k < kConnSlabs; ++k) {
    Conn* s = g_conn_slabs[k].load(std::memory_order_relaxed);
    if (!s) break;
    for (size_t i = 0; i < (size_t{kConnSlab0} << k); ++i) {
      pthread_mutex_init(&s[i].tx_mu, nullptr);
      pthread_mutex_init(&s[i].rx_mu, nullptr);
      s[i].tx_owner.store(0, std::memory_order_relaxed);
      s[i].rx_owner.store(0, std::memory_order_relaxed);
      if (s[i].tx_pend.exchange(false, std::memory_order_relaxed)) tx_disown(s[i].tx, EPIPE);  // the parent's bytes
      // Retired while a thread of the parent held a lock: nobody else will release it.
      if (s[i].retired.load(std::memory_order_relaxed)) conn_release_if_idle(&s[i]);
    }
  }
}

void pool_totals(ConnTotals& t) noexcept {
  pthread_mutex_lock(&g_pool_mu);
  t = g_closed;
  pool_each([&](Conn* c) { add_totals(t, *c); });
  pthread_mutex_unlock(&g_pool_mu);
}

}  // namespace bonsai::compress