// SPDX-License-Identifier: MIT
// Compressed connections: Conn records (compress/conn_record.h) in slabs mmap'd as
// they are needed (slab k holds 64<<k records: no fixed maximum), each with its sending and receiving
// workspaces mmap'd on first use and kept for reuse, so no call allocates once a
// record exists. Records are recycled, never unmapped: a read racing a close() on
// another thread sees a stale record, never freed memory.
//
// A record remembers the identity (st_dev, st_ino) of the socket it was set up for;
// conn_verify() checks, before the record is used for a number, that the number
// still holds that socket (a close_range(), closefrom() or dup2() the wrappers do
// not see may have given the number to something else).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <pthread.h>

#include "compress/conn_record.h"
#include "compress/conn_workspace.h"
#include "compress/rx_stream.h"
#include "compress/tx_stream.h"

namespace bonsai::compress {

// Bytes moved through compressed connections, for the stats line.
struct ConnTotals {
  uint64_t tx_app, tx_wire, rx_app, rx_wire;
  uint64_t frames[kMethodCount];
  uint64_t level_chunks[kMaxLevels];
};

inline constexpr unsigned kConnSlab0 = 64;
inline constexpr unsigned kConnSlabs = 26;  // 64 * (2^26 - 1) records: more than descriptors can exist

// Reads fd's identity. @return false if fd is not an open socket.
bool socket_identity(int fd, uint64_t* dev, uint64_t* ino) noexcept;

// @return a free record bound to fd, with fd's identity (streams not yet enabled),
// or nullptr if fd is not a socket or no memory is left for another record.
Conn* conn_acquire(int fd) noexcept;
// Takes a record out of use once it is no longer reachable from the table: it is
// returned to the pool (its byte counts added to the totals) as soon as no thread
// holds its locks (else by the last holder, in conn_unlocked).
void conn_retire(Conn* c) noexcept;
// Call after unlocking tx_mu or rx_mu: finishes a retirement that waited for it.
inline void conn_unlocked(Conn* c) noexcept;

// @return true if fd still holds the socket c was set up for (one fstat).
bool conn_verify(const Conn* c, int fd) noexcept;

// Does number fd reach c: its owner, or one of its aliases?
inline bool conn_reaches(const Conn* c, int fd) noexcept {
  if (fd < 0) return false;
  if (c->fd.load(std::memory_order_acquire) == fd) return true;
  for (const auto& a : c->alias)
    if (a.load(std::memory_order_acquire) == fd) return true;
  return false;
}
// Calls f(number) for c's owner and each alias.
template <typename F>
void conn_each_number(const Conn* c, F&& f) noexcept {
  int owner = c->fd.load(std::memory_order_acquire);
  if (owner >= 0) f(owner);
  for (const auto& a : c->alias)
    if (int n = a.load(std::memory_order_acquire); n >= 0) f(n);
}
// Number `dup` now reaches c as well (a duplicate of one of its numbers).
// @return false if c has kConnAliases aliases already.
bool conn_add_alias(Conn* c, int dup) noexcept;
// Number fd no longer reaches c (closed, or holding something else now). If it was
// the owner, an alias becomes the owner.
enum class Dropped : uint8_t {
  Kept,     // another number still reaches c: it stays in use
  Last,     // fd was its last number: the caller retires it
  Elsewhere // fd did not reach c (a stale word: c is another socket's now): leave it
};
Dropped conn_drop_number(Conn* c, int fd) noexcept;

// Call after each read under rx_mu: keeps the pending count in step with rx_pending.
void conn_update_pending(Conn* c) noexcept;
extern constinit std::atomic<int> g_pending_conns;
// Call after each write or flush under tx_mu: keeps tx_pend in step with tx_pending.
void conn_update_tx_pending(Conn* c) noexcept;
extern constinit std::atomic<int> g_tx_pending_conns;
// Records with owe_out set (so epoll_wait looks for them only when there are some).
extern constinit std::atomic<int> g_tx_owed_conns;
// Sets or clears c->owe_out, keeping g_tx_owed_conns in step. @return the old value.
inline bool conn_set_owed(Conn* c, bool v) noexcept {
  bool old = c->owe_out.exchange(v, std::memory_order_acq_rel);
  if (old != v) g_tx_owed_conns.fetch_add(v ? 1 : -1, std::memory_order_relaxed);
  return old;
}

// In a fork()ed child: re-initialises every record's locks (a thread of the parent
// may have held one; it does not exist in the child). A send buffer holding bytes
// belongs to the parent: the child forgets it (they are never sent twice) and its
// writes on that connection fail with EPIPE (its frames would overtake the parent's).
void pool_after_fork() noexcept;

// Calls f(Conn*) for every record bound to a descriptor (no lock; f must not block).
template <typename F>
void pool_each(F&& f) noexcept;

void pool_totals(ConnTotals& t) noexcept;

// ---- inline parts ----
extern constinit std::atomic<Conn*> g_conn_slabs[kConnSlabs];
void conn_release_if_idle(Conn* c) noexcept;

inline void conn_unlocked(Conn* c) noexcept {
  if (c->retired.load(std::memory_order_seq_cst)) [[unlikely]] conn_release_if_idle(c);
}

template <typename F>
void pool_each(F&& f) noexcept {
  for (unsigned k = 0; k < kConnSlabs; ++k) {
    Conn* s = g_conn_slabs[k].load(std::memory_order_acquire);
    if (!s) break;
    for (size_t i = 0; i < (size_t{kConnSlab0} << k); ++i)
      if (s[i].fd.load(std::memory_order_acquire) >= 0) f(&s[i]);
  }
}

}  // namespace bonsai::compress
