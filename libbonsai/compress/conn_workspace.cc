// SPDX-License-Identifier: MIT
// Workspace mappings of compressed connections (see conn_workspace.h): the memory cap,
// mapping and growing a record's workspaces in place, giving widened pages back, and
// enabling a record's sending and receiving halves on them. Only a connection's first
// use and a widening map or commit memory; reads and writes never do.
#include "compress/conn_workspace.h"

#include <cerrno>
#include <sys/mman.h>
#include <unistd.h>

#include "compress/rx_stream.h"
#include "compress/tx_stream.h"

namespace bonsai::compress {

namespace {
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

}  // namespace

// A long connection's zstd pages (of a context or decoder that widened to the 8 MiB
// window: up to ~10 MiB touched each) go back to the system.
// Records are kept for reuse, so a server's memory would otherwise stay at what its
// longest connections touched once; the next connection on the record re-makes its
// contexts anyway. Short connections keep theirs (refilling them would cost each new
// connection its page faults). Under both locks: nobody uses the workspaces.
void conn_give_back_grown(Conn& c) noexcept {
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

}  // namespace bonsai::compress
