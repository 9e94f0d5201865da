// SPDX-License-Identifier: MIT
// The pool of compressed connections (see conn_pool.h). Only connect/accept/close
// and a connection's first use take the pool lock; reads and writes never do.
#include "compress/conn_pool.h"

#include <cstring>
#include <sys/mman.h>

namespace bonsai::compress {
namespace {
constinit Conn* g_pool = nullptr;
constinit pthread_mutex_t g_pool_mu = PTHREAD_MUTEX_INITIALIZER;
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
}  // namespace

constinit std::atomic<int> g_pending_conns{0};

bool pool_init() noexcept {
  if (g_pool) return true;
  auto* p = static_cast<Conn*>(map(sizeof(Conn) * kMaxConns));
  if (!p) return false;
  for (size_t i = 0; i < kMaxConns; ++i) {
    p[i].fd.store(-1, std::memory_order_relaxed);
    pthread_mutex_init(&p[i].tx_mu, nullptr);
    pthread_mutex_init(&p[i].rx_mu, nullptr);
  }
  g_pool = p;
  return true;
}

Conn* conn_acquire(int fd) noexcept {
  if (!g_pool) return nullptr;
  pthread_mutex_lock(&g_pool_mu);
  Conn* found = nullptr;
  for (size_t i = 0; i < kMaxConns && !found; ++i) {
    Conn& c = g_pool[i];
    if (c.fd.load(std::memory_order_relaxed) != -1) continue;
    c.rx_state.store(kRxUnknown, std::memory_order_relaxed);
    c.tx_on.store(false, std::memory_order_relaxed);
    c.pending.store(false, std::memory_order_relaxed);
    c.tx.app_bytes = c.tx.wire_bytes = c.rx.app_bytes = c.rx.wire_bytes = 0;
    std::memset(c.tx.frames, 0, sizeof c.tx.frames);
    std::memset(c.tx.level_chunks, 0, sizeof c.tx.level_chunks);
    c.fd.store(fd, std::memory_order_release);
    found = &c;
  }
  pthread_mutex_unlock(&g_pool_mu);
  return found;
}

void conn_release(Conn* c) noexcept {
  pthread_mutex_lock(&c->rx_mu);
  if (c->pending.exchange(false)) g_pending_conns.fetch_sub(1, std::memory_order_relaxed);
  pthread_mutex_unlock(&c->rx_mu);
  pthread_mutex_lock(&g_pool_mu);
  add_totals(g_closed, *c);
  c->tx.app_bytes = c->tx.wire_bytes = c->rx.app_bytes = c->rx.wire_bytes = 0;
  std::memset(c->tx.frames, 0, sizeof c->tx.frames);
  std::memset(c->tx.level_chunks, 0, sizeof c->tx.level_chunks);
  c->tx_on.store(false, std::memory_order_relaxed);
  c->rx_state.store(kRxUnknown, std::memory_order_relaxed);
  c->fd.store(-1, std::memory_order_release);
  pthread_mutex_unlock(&g_pool_mu);
}

bool conn_tx_enable(Conn* c, const LevelList* levels, const PolicyConfig& policy) noexcept {
  size_t need = tx_stream_size(*levels) + kMaxFrameRaw;
  if (!c->tx_mem) {
    c->tx_mem = map(need);
    if (!c->tx_mem) return false;
    c->tx_size = need;
  }
  if (c->tx_size < need) return false;
  c->file_buf = static_cast<uint8_t*>(c->tx_mem) + tx_stream_size(*levels);
  if (!tx_stream_init(c->tx, c->tx_mem, tx_stream_size(*levels), levels, policy)) return false;
  c->tx_on.store(true, std::memory_order_release);
  return true;
}

bool conn_rx_enable(Conn* c) noexcept {
  size_t need = rx_stream_size();
  if (!c->rx_mem) {
    c->rx_mem = map(need);
    if (!c->rx_mem) return false;
    c->rx_size = need;
  }
  return rx_stream_init(c->rx, c->rx_mem, c->rx_size);
}

void conn_update_pending(Conn* c) noexcept {
  bool now = rx_pending(c->rx);
  if (now == c->pending.load(std::memory_order_relaxed)) return;
  c->pending.store(now, std::memory_order_release);
  g_pending_conns.fetch_add(now ? 1 : -1, std::memory_order_relaxed);
}

void pool_after_fork() noexcept {
  pthread_mutex_init(&g_pool_mu, nullptr);
  for (size_t i = 0; g_pool && i < kMaxConns; ++i) {
    pthread_mutex_init(&g_pool[i].tx_mu, nullptr);
    pthread_mutex_init(&g_pool[i].rx_mu, nullptr);
    g_pool[i].tx_owner.store(0, std::memory_order_relaxed);
    g_pool[i].rx_owner.store(0, std::memory_order_relaxed);
  }
}

Conn* pool_record(size_t i) noexcept { return g_pool && i < kMaxConns ? &g_pool[i] : nullptr; }

void pool_totals(ConnTotals& t) noexcept {
  pthread_mutex_lock(&g_pool_mu);
  t = g_closed;
  for (size_t i = 0; g_pool && i < kMaxConns; ++i)
    if (g_pool[i].fd.load(std::memory_order_relaxed) != -1) add_totals(t, g_pool[i]);
  pthread_mutex_unlock(&g_pool_mu);
}

}  // namespace bonsai::compress
