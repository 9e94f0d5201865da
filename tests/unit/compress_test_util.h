// SPDX-License-Identifier: MIT
// Helpers for the compression unit tests: test data (compressible text and random
// bytes, mixed), aligned workspaces, and IoOps over plain libc calls.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <poll.h>
#include <random>
#include <string>
#include <sys/socket.h>
#include <time.h>
#include <vector>

#include "compress/codec.h"
#include "compress/stream_io.h"

namespace compress_test {

inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}
inline ssize_t libc_sendmsg(int fd, const msghdr* m, int f) { return ::sendmsg(fd, m, f); }
inline ssize_t libc_recv(int fd, void* b, size_t n, int f) { return ::recv(fd, b, n, f); }
inline int libc_poll(pollfd* p, nfds_t n, int t) { return ::poll(p, n, t); }
inline const bonsai::compress::IoOps kLibcIo{libc_sendmsg, libc_recv, libc_poll, now_ns};
inline const bonsai::compress::WireMeter kNoMeter{nullptr, nullptr, nullptr};

// Text-like bytes: words from a small vocabulary (compresses ~3x).
inline void fill_text(std::mt19937& rng, uint8_t* p, size_t n) {
  static const char* kWords[] = {"bonsai ", "limit ", "the ", "socket ", "frame ", "compress ", "rate ",
                                 "\n  * ", "debian ", "changelog ", "fix ", "version ", "2.36-", "-- "};
  size_t i = 0;
  while (i < n) {
    const char* w = kWords[rng() % (sizeof kWords / sizeof *kWords)];
    while (*w && i < n) p[i++] = static_cast<uint8_t>(*w++);
  }
}

// Mixed data: runs of text and of random bytes, each 1 B..256 KiB.
inline std::vector<uint8_t> mixed_data(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  size_t i = 0;
  bool text = true;
  while (i < n) {
    size_t run = 1 + rng() % (256 * 1024);
    if (run > n - i) run = n - i;
    if (text) fill_text(rng, v.data() + i, run);
    else
      for (size_t k = 0; k < run; ++k) v[i + k] = static_cast<uint8_t>(rng());
    i += run;
    text = !text;
  }
  return v;
}

// Log-uniform size in [1, max].
inline size_t log_size(std::mt19937& rng, size_t max) {
  int bits = 1 + static_cast<int>(rng() % 22);
  size_t n = 1 + rng() % (size_t{1} << bits);
  return n < max ? n : max;
}

struct Workspace {
  explicit Workspace(size_t n) : size(n), mem(static_cast<uint8_t*>(std::aligned_alloc(64, (n + 63) / 64 * 64))) {}
  ~Workspace() { std::free(mem); }
  size_t size;
  uint8_t* mem;
};

// ExtraMem for a test: one block, and one 8 MiB decoder block per zstd stream (unless
// `wide_ok` is false), each allocated on its first get (as conn_pool maps them).
struct Extra {
  static void* get(void* ctx, size_t n) {
    auto* e = static_cast<Extra*>(ctx);
    ++e->gets;
    if (!e->ws) e->ws = std::make_unique<Workspace>(n > e->reserve ? n : e->reserve);
    return e->ws->size >= n ? e->ws->mem : nullptr;
  }

  static void* wide(void* ctx, int stream, size_t n) {
    auto* e = static_cast<Extra*>(ctx);
    ++e->wide_gets[stream];
    if (!e->wide_ok) return nullptr;
    auto& w = e->wide_ws[stream];
    if (!w) w = std::make_unique<Workspace>(n);
    return w->size >= n ? w->mem : nullptr;
  }
  bonsai::compress::ExtraMem mem() { return bonsai::compress::ExtraMem{get, this, wide}; }
  std::unique_ptr<Workspace> ws;
  std::unique_ptr<Workspace> wide_ws[bonsai::compress::kZstdStreams];
  size_t reserve = 0;  // get() makes its block at least this large
  int gets = 0;
  int wide_gets[bonsai::compress::kZstdStreams] = {0, 0};
  bool wide_ok = true;
};
}  // namespace compress_test
