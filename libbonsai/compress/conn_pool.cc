// SPDX-License-Identifier: MIT
// The pool of compressed connections (see conn_pool.h). Only connect/accept/close,
// a connection's first use and a retirement take the pool lock; reads and writes
// never do.
#include "compress/conn_pool.h"

#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compress/calibrator.h"
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
constinit std::atomic<uint64_t> g_mem_cap{UINT64_MAX};
constinit std::atomic<uint64_t> g_mem_mapped{0};
constinit std::atomic<uint64_t> g_mem_peak{0};     // the most g_mem_mapped has been
constinit std::atomic<uint64_t> g_mem_refused{0};  // workspaces (or growths) refused

// Charges n bytes of workspace against the cap. @return false (nothing charged) past it.
bool charge(size_t n) {
  uint64_t now = g_mem_mapped.fetch_add(n, std::memory_order_relaxed) + n;
  if (now > g_mem_cap.load(std::memory_order_relaxed)) {
    g_mem_mapped.fetch_sub(n, std::memory_order_relaxed);
    g_mem_refused.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  uint64_t peak = g_mem_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_mem_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return true;
}
// Takes back a charge whose mapping failed.
void uncharge(size_t n) {
  g_mem_mapped.fetch_sub(n, std::memory_order_relaxed);
  g_mem_refused.fetch_add(1, std::memory_order_relaxed);
}

size_t page_round(size_t n) {
  auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

// Maps a connection's workspace of `n` bytes if the cap allows it, with address space
// reserved after it up to `reserve` bytes (PROT_NONE: neither memory nor commit
// charge), which grow_workspace may commit in place later.
void* map_workspace(size_t n, size_t reserve = 0) {
  if (!charge(n)) return nullptr;
  void* p;
  if (reserve <= page_round(n)) {
    p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  } else {
    p = mmap(nullptr, reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED && mprotect(p, page_round(n), PROT_READ | PROT_WRITE) != 0) {
      munmap(p, reserve);
      p = MAP_FAILED;
    }
  }
  if (p != MAP_FAILED) return p;
  uncharge(n);
  return nullptr;
}

// Commits a workspace (mem, *size mapped, `reserved` reserved) up to `end` bytes from
// mem, within the cap. @return whether it now holds that many.
bool grow_workspace(void* mem, size_t* size, size_t reserved, size_t end) {
  if (end <= *size) return true;
  if (end > reserved) return false;
  size_t add = end - *size, from = page_round(*size), to = page_round(end);
  if (!charge(add)) return false;
  if (to > from && mprotect(static_cast<char*>(mem) + from, to - from, PROT_READ | PROT_WRITE) != 0) {
    uncharge(add);
    return false;
  }
  *size = end;
  return true;
}

// Gives back the pages of a workspace block (mem, `size` mapped) from `from` on: a
// private anonymous mapping reads zero there after, as a fresh one does.
void give_back(const void* from, void* mem, size_t size) {
  auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  auto f = reinterpret_cast<uintptr_t>(from), m = reinterpret_cast<uintptr_t>(mem);
  uintptr_t start = (f + page - 1) / page * page, end = m + page_round(size);
  if (!mem || f < m || start >= end) return;
  madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
}

// When a record is released: a long connection's zstd pages (of a context or decoder
// that widened to the 8 MiB window: up to ~10 MiB touched each) go back to the system.
// Records are kept for reuse, so a server's memory would otherwise stay at what its
// longest connections touched once; the next connection on the record re-makes its
// contexts anyway. Short connections keep theirs (refilling them would cost each new
// connection its page faults). Under both locks: nobody uses the workspaces.
void give_back_grown(Conn& c) {
  int saved = errno;
  const TxStreamCodec& t = c.tx.codec;
  if (c.tx_mem && t.nzstd >= 1 && t.zstd_bytes >= kZstdWidenAfter) {
    give_back(t.zs[0].base, c.tx_mem, c.tx_size);
    if (t.nzstd >= 2) give_back(c.tx_extra, c.tx_extra, c.tx_extra_size);
  }
  if (c.rx_mem && c.rx.codec.wide[0]) give_back(c.rx.codec.zbase[0], c.rx_mem, c.rx_size);
  if (c.rx_extra && c.rx.codec.wide[1]) give_back(c.rx_extra, c.rx_extra, c.rx_extra_size);
  errno = saved;
}

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
  if (pthread_mutex_trylock(&c->tx_mu) != 0) return;
  if (pthread_mutex_trylock(&c->rx_mu) != 0) {
    pthread_mutex_unlock(&c->tx_mu);
    return;
  }
  bool mine = c->retired.exchange(false, std::memory_order_acq_rel);
  if (mine) {
    if (c->pending.exchange(false)) g_pending_conns.fetch_sub(1, std::memory_order_relaxed);
    if (c->tx_pend.exchange(false)) g_tx_pending_conns.fetch_sub(1, std::memory_order_relaxed);
    conn_set_owed(c, false);
    c->tx.pend_len = c->tx.pend_off = 0;  // what close could not send is dropped (logged there)
    give_back_grown(*c);
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

void pool_set_mem_cap(uint64_t bytes) noexcept { g_mem_cap.store(bytes, std::memory_order_relaxed); }
uint64_t pool_mem_mapped() noexcept { return g_mem_mapped.load(std::memory_order_relaxed); }
uint64_t pool_mem_peak() noexcept { return g_mem_peak.load(std::memory_order_relaxed); }
uint64_t pool_mem_refused() noexcept { return g_mem_refused.load(std::memory_order_relaxed); }

namespace {
// ExtraMem::get for a record's sending side: its block, mapped (within the memory cap)
// the first time, with room reserved for the 8 MiB window (tx_grow).
void* tx_extra(void* ctx, size_t n) {
  auto* c = static_cast<Conn*>(ctx);
  if (!c->tx_extra) {
    size_t wide = c->tx.levels ? tx_stream_codec_extra_size(*c->tx.levels, true) : 0;
    c->tx_extra_reserved = page_round(n > wide ? n : wide);
    c->tx_extra = map_workspace(n, c->tx_extra_reserved);
    if (!c->tx_extra) return nullptr;
    c->tx_extra_size = n;
  }
  return c->tx_extra_size >= n ? c->tx_extra : nullptr;
}
// ZstdRoomGrow for a sender: commits more of the block holding `base` in place.
bool tx_grow(void* ctx, void* base, size_t n) {
  auto* c = static_cast<Conn*>(ctx);
  auto* b = static_cast<char*>(base);
  struct Block { void* mem; size_t* size; size_t reserved; } blocks[] = {
      {c->tx_mem, &c->tx_size, c->tx_reserved}, {c->tx_extra, &c->tx_extra_size, c->tx_extra_reserved}};
  for (const Block& k : blocks) {
    auto* m = static_cast<char*>(k.mem);
    if (m && b >= m && b < m + k.reserved) return grow_workspace(m, k.size, k.reserved, static_cast<size_t>(b - m) + n);
  }
  return false;
}
// ExtraMem::get for a record's receiving side: likewise (rx_wide).
void* rx_extra(void* ctx, size_t n) {
  auto* c = static_cast<Conn*>(ctx);
  if (!c->rx_extra) {
    size_t wide = rx_codec_wide_size();
    c->rx_extra_reserved = page_round(n > wide ? n : wide);
    c->rx_extra = map_workspace(n, c->rx_extra_reserved);
    if (!c->rx_extra) return nullptr;
    c->rx_extra_size = n;
  }
  return c->rx_extra_size >= n ? c->rx_extra : nullptr;
}
// ExtraMem::wide: stream 0's decoder, last in the receiving workspace, and stream 1's,
// the whole extra block, grown in place to `n` bytes (the decoder is re-made there at
// a new frame: rx_codec_widen).
void* rx_wide(void* ctx, int stream, size_t n) {
  auto* c = static_cast<Conn*>(ctx);
  if (stream == 1) {
    if (!c->rx_extra) return rx_extra(ctx, n);
    auto* m = static_cast<char*>(c->rx_extra);
    return grow_workspace(m, &c->rx_extra_size, c->rx_extra_reserved, n) ? m : nullptr;
  }
  if (stream != 0) return nullptr;
  auto *m = static_cast<char*>(c->rx_mem), *b = static_cast<char*>(c->rx.codec.zbase[0]);
  if (!m || b < m || b >= m + c->rx_reserved) return nullptr;
  return grow_workspace(m, &c->rx_size, c->rx_reserved, static_cast<size_t>(b - m) + n) ? b : nullptr;
}
}  // namespace

bool conn_tx_enable(Conn* c, const LevelList* levels, const PolicyConfig& policy) noexcept {
  // sendfile's bounce buffer first, the stream's workspace after it: its last part, the
  // first zstd stream's room, mapped for the 2 MiB window and grown in place (tx_grow).
  size_t need = kMaxFrameRaw + tx_stream_size(*levels, false);
  if (!c->tx_mem) {
    c->tx_reserved = page_round(kMaxFrameRaw + tx_stream_size(*levels, true));
    c->tx_mem = map_workspace(need, c->tx_reserved);
    if (!c->tx_mem) return false;
    c->tx_size = need;
  }
  if (c->tx_size < need) return false;
  c->file_buf = static_cast<uint8_t*>(c->tx_mem);
  if (!tx_stream_init(c->tx, c->file_buf + kMaxFrameRaw, c->tx_size - kMaxFrameRaw, levels, policy)) return false;
  c->tx.extra = ExtraMem{tx_extra, c};
  c->tx.codec.grow = ZstdRoomGrow{tx_grow, c};
  c->tx_on.store(true, std::memory_order_release);
  return true;
}

bool conn_rx_enable(Conn* c) noexcept {
  // The first decoder is last in the workspace: address space is reserved after it for
  // the 8 MiB window's (rx_wide).
  size_t need = rx_stream_size();
  if (!c->rx_mem) {
    c->rx_reserved = page_round(need - rx_codec_extra_size() + rx_codec_wide_size());
    c->rx_mem = map_workspace(need, c->rx_reserved);
    if (!c->rx_mem) return false;
    c->rx_size = need;
  }
  if (!rx_stream_init(c->rx, c->rx_mem, c->rx_size)) return false;
  c->rx.extra = ExtraMem{rx_extra, c, rx_wide};
  return true;
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
