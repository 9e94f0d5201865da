// SPDX-License-Identifier: MIT
// A compressed connection's record (Conn): its numbers (the owner and its aliases), its
// sending and receiving streams under their locks, the socket's identity and the
// workspaces that hold the streams' memory. The table of records (conn_pool.h) and
// their memory (conn_workspace.h) both work on it; neither includes the other's header
// for it. Data only.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <pthread.h>

#include "compress/rx_stream.h"
#include "compress/tx_state.h"

namespace bonsai::compress {

enum RxState : uint8_t { kRxUnknown = 0, kRxPlain = 1, kRxFramed = 2 };

// Other numbers a connection's socket is reachable by (dup, dup2, dup3, F_DUPFD) that
// share its streams: beyond this many a duplicate is not framed (logged once).
inline constexpr unsigned kConnAliases = 4;

struct alignas(64) Conn {
  std::atomic<int> fd;  // -1: free. The owner number; when it closes, an alias takes over
  std::atomic<int> alias[kConnAliases];  // -1: none
  std::atomic<uint8_t> rx_state;
  std::atomic<bool> tx_on;
  std::atomic<bool> pending;  // counted in g_pending_conns (written under rx_mu)
  std::atomic<bool> retired;  // no longer in the table: release once nobody holds a lock
  std::atomic<bool> tx_pend;  // the send buffer holds bytes; counted in g_tx_pending_conns (under tx_mu)
  std::atomic<bool> owe_out;  // the application was refused (EAGAIN) or had a POLLOUT withheld:
                              // report EPOLLOUT once the send buffer is empty (edge-triggered epoll)
  uint64_t dev, ino;          // the socket's identity
  pthread_mutex_t tx_mu, rx_mu;
  std::atomic<unsigned long> tx_owner, rx_owner;  // pthread_self() of the holder, 0 if free
  TxStream tx;
  RxStream rx;
  // The sending workspace: tx_size bytes mapped, with address space reserved up to
  // tx_reserved for the first zstd stream's 8 MiB window (committed when a connection
  // first widens, then kept like the rest: ZstdRoomGrow); tx_extra likewise.
  void* tx_mem;
  size_t tx_size, tx_reserved;
  void* rx_mem;  // likewise: rx_size mapped, rx_reserved for the first decoder's 8 MiB window
  size_t rx_size, rx_reserved;
  // The second zstd stream's workspaces (ExtraMem), mapped when a connection first
  // needs one and kept with the record like the others; each with address space
  // reserved for the 8 MiB window, committed in place when its frames widen.
  void* tx_extra;
  size_t tx_extra_size, tx_extra_reserved;
  void* rx_extra;
  size_t rx_extra_size, rx_extra_reserved;
  uint8_t* file_buf;  // kMaxFrameRaw bytes in tx_mem: sendfile's bounce buffer
  Conn* next_free;
};

}  // namespace bonsai::compress
