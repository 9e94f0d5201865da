// SPDX-License-Identifier: MIT
// Compressed connections: a fixed pool of Conn records (mmap'd once), each with its
// sending and receiving workspaces mmap'd on first use and kept for reuse, so no
// call allocates. Records are recycled, never unmapped: a read racing a close()
// on another thread sees a stale record, never freed memory.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <pthread.h>

#include "compress/rx_stream.h"
#include "compress/tx_stream.h"

namespace bonsai::compress {

enum RxState : uint8_t { kRxUnknown = 0, kRxPlain = 1, kRxFramed = 2 };

struct Conn {
  std::atomic<int> fd;  // -1: free
  std::atomic<uint8_t> rx_state;
  std::atomic<bool> tx_on;
  std::atomic<bool> pending;  // counted in g_pending_conns (written under rx_mu)
  pthread_mutex_t tx_mu, rx_mu;
  std::atomic<unsigned long> tx_owner, rx_owner;  // pthread_self() of the holder, 0 if free
  TxStream tx;
  RxStream rx;
  void* tx_mem;
  size_t tx_size;
  void* rx_mem;
  size_t rx_size;
  uint8_t* file_buf;  // kMaxFrameRaw bytes in tx_mem: sendfile's bounce buffer
};

// Bytes moved through compressed connections, for the stats line.
struct ConnTotals {
  uint64_t tx_app, tx_wire, rx_app, rx_wire;
  uint64_t frames[kMethodCount];
  uint64_t level_chunks[kMaxLevels];
};

inline constexpr size_t kMaxConns = 1024;

// Maps the pool (once). @return false if mmap failed.
bool pool_init() noexcept;

// @return a free record bound to fd (streams not yet enabled), or nullptr if full.
Conn* conn_acquire(int fd) noexcept;
// Returns the record to the pool, adding its byte counts to the totals.
void conn_release(Conn* c) noexcept;

// Sets up the sending half (workspace mapped on first use). @return success.
bool conn_tx_enable(Conn* c, const LevelList* levels, const PolicyConfig& policy) noexcept;
// Sets up the receiving half. @return success.
bool conn_rx_enable(Conn* c) noexcept;

// Call after each read under rx_mu: keeps the pending count in step with rx_pending.
void conn_update_pending(Conn* c) noexcept;
extern constinit std::atomic<int> g_pending_conns;

// In a fork()ed child: re-initialises every record's locks (a thread of the parent
// may have held one; it does not exist in the child).
void pool_after_fork() noexcept;

// Visits every live record (for epoll readiness). f(Conn*) must not block.
Conn* pool_record(size_t i) noexcept;

void pool_totals(ConnTotals& t) noexcept;

}  // namespace bonsai::compress
