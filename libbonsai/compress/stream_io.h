// SPDX-License-Identifier: MIT
// The seam between the compressed streams and the system: the calls they make
// (the library passes glibc's real functions, tests pass their own) and the wire
// meter through which a byte limit sees wire bytes. No state of its own.
#pragma once
#include <cstddef>
#include <cstdint>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

namespace bonsai::compress {

struct LoopBudget;  // compress/tx_loop_budget.h

struct IoOps {
  ssize_t (*sendmsg)(int fd, const msghdr* m, int flags);
  ssize_t (*recv)(int fd, void* buf, size_t n, int flags);
  int (*poll)(pollfd* fds, nfds_t n, int timeout);
  uint64_t (*now_ns)();
};

// A byte limit on wire bytes. allow(): waits if the bucket is in debt and returns
// how many of `want` bytes the next real call may move (>= 1). charge(): what it
// moved. Both may be null (no limit). A meter that must not wait (`nowait`: a
// non-blocking call, runtime/pace.h) returns 0 from allow() when the bucket refuses
// now: nothing may move, the descriptor holds a place in the bucket's queue.
struct WireMeter {
  size_t (*allow)(void* ctx, size_t want);
  void (*charge)(void* ctx, ssize_t moved);
  void* ctx;
  bool capped;  // a byte limit applies to these writes (not only accounting)
  // That limit's rate in bytes/s (an upper bound on the link: other processes of the
  // service may share it). 0: unknown.
  double rate_bps;
  // How far ahead of the link the sender is, in bucket depths: the time its bucket's
  // takes run ahead of now over the depth (0: the bucket is full, idle; 1: the next
  // take waits). May be null (no bucket: unknown).
  double (*ahead)(void* ctx);
  // That bucket's depth in ns (how far ahead `ahead` 1 is); 0: not known.
  double depth_ns;
  // allow() never waits: it may return 0 (see above).
  bool nowait = false;
  // The calling thread's compression budget, for a non-blocking call (an event loop's
  // thread serves every descriptor: compress/tx_loop_budget.h). Null: none (blocking).
  LoopBudget* loop = nullptr;
};

// Memory a stream maps only when it first needs it (a second zstd stream: most
// connections never change level). get(): `n` bytes (16-aligned), the same block each
// time for one connection record (kept for the record's reuse), or nullptr (none: the
// memory cap, or out of memory). May be null (no more memory). wide() likewise, a
// block of n bytes for zstd stream 0 or 1's 8 MiB decoder (receivers; null for
// senders): the pool's grows the stream's own decoder workspace in place.
struct ExtraMem {
  void* (*get)(void* ctx, size_t n);
  void* ctx;
  void* (*wide)(void* ctx, int stream, size_t n) = nullptr;
};

// Copies up to `n` bytes from `src` into the iovec array at byte offset `skip`.
// @return bytes copied.
inline size_t iov_copy_in(const iovec* v, int cnt, size_t skip, const uint8_t* src, size_t n) {
  size_t done = 0;
  for (int i = 0; i < cnt && done < n; ++i) {
    size_t len = v[i].iov_len;
    if (skip >= len) {
      skip -= len;
      continue;
    }
    size_t take = len - skip < n - done ? len - skip : n - done;
    __builtin_memcpy(static_cast<uint8_t*>(v[i].iov_base) + skip, src + done, take);
    done += take;
    skip = 0;
  }
  return done;
}

inline size_t iov_sum(const iovec* v, int cnt) {
  size_t t = 0;
  for (int i = 0; v && i < cnt; ++i) t += v[i].iov_len;
  return t;
}

}  // namespace bonsai::compress
