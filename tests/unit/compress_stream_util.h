// SPDX-License-Identifier: MIT
// Helpers for the tests that run whole compressed streams (compress_history_test.cc,
// compress_mix_test.cc, compress_corrupt_test.cc): a sending stream with a policy by
// name, writes captured from a socketpair, a decoder over the captured wire, and the
// wire's frames.
#pragma once
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>
#include <unistd.h>
#include <vector>

#include "compress/rx_stream.h"
#include "compress/tx_stream.h"
#include "compress/wire_format.h"
#include "compress_test_util.h"

namespace compress_test {
using namespace bonsai::compress;

// A sending stream over the default levels, its policy by name ("datarate"), with
// memory for a second zstd stream when it asks (as the library gives it) unless
// `second_zstd` is false. Each zstd stream's room is given for the 2 MiB window if
// `narrow` (as the pool maps it) and grows in place to the 8 MiB one's (grow_ok:
// the blocks are allocated that large, as the pool reserves address space), else
// for the 8 MiB window from the start.
struct Tx {
  explicit Tx(const char* policy, bool second_zstd = true, bool narrow = false)
      : levels(levels_default()), ws(tx_stream_size(levels)) {
    PolicyConfig p{};
    REQUIRE(policy_parse(policy, levels, p) == nullptr);
    REQUIRE(tx_stream_init(tx, ws.mem, narrow ? tx_stream_size(levels, false) : ws.size, &levels, p));
    if (second_zstd) tx.extra = extra.mem();
    extra.reserve = tx_stream_codec_extra_size(levels, true);
    tx.codec.grow = ZstdRoomGrow{grow, this};
  }
  static bool grow(void* ctx, void* base, size_t n) {
    auto* t = static_cast<Tx*>(ctx);
    ++t->grows;
    auto inside = [&](const Workspace* w) {
      auto *b = static_cast<uint8_t*>(base), *m = w ? static_cast<uint8_t*>(w->mem) : nullptr;
      return m && b >= m && b + n <= m + w->size;
    };
    return t->grow_ok && (inside(&t->ws) || inside(t->extra.ws.get()));
  }
  LevelList levels;
  Workspace ws;
  Extra extra;
  TxStream tx{};
  int grows = 0;
  bool grow_ok = true;
};

// A socketpair whose far end a thread reads and discards: `fd` is the sending end.
// Closing it (or the destructor) ends the reader.
struct Drain {
  Drain() {
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    reader = std::thread([this] {
      uint8_t buf[1 << 16];
      while (::read(sv[1], buf, sizeof buf) > 0) {
      }
    });
  }
  ~Drain() { finish(); }
  void finish() {
    if (sv[0] < 0) return;
    ::close(sv[0]);
    sv[0] = -1;
    reader.join();
    ::close(sv[1]);
  }
  int fd() const { return sv[0]; }
  int sv[2] = {-1, -1};
  std::thread reader;
};

// One write of `n` bytes at the current level through `meter`, to a socketpair.
inline void put(Tx& t, int fd, const uint8_t* p, size_t n, const WireMeter& meter = kNoMeter) {
  iovec v{const_cast<uint8_t*>(p), n};
  REQUIRE(tx_write(t.tx, kLibcIo, meter, fd, &v, 1, 0) == static_cast<ssize_t>(n));
}

// Writes `data` in calls of the sizes `next` returns, switching the level with
// `level_of(call)` if given, through `meter`; returns the wire bytes.
template <typename Size, typename Lvl>
std::vector<uint8_t> encode(Tx& t, const std::vector<uint8_t>& data, Size next, Lvl level_of,
                            const WireMeter& meter = kNoMeter) {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  std::vector<uint8_t> wire;
  std::thread r([&] {
    uint8_t buf[1 << 16];
    for (ssize_t k; (k = ::read(sv[1], buf, sizeof buf)) > 0;) wire.insert(wire.end(), buf, buf + k);
  });
  size_t pos = 0;
  for (unsigned call = 0; pos < data.size(); ++call) {
    size_t n = next(call);
    if (n > data.size() - pos) n = data.size() - pos;
    t.tx.policy.level = level_of(call);
    put(t, sv[0], data.data() + pos, n, meter);
    pos += n;
  }
  close(sv[0]);
  r.join();
  close(sv[1]);
  return wire;
}

// The receiving side reads the captured wire from memory, 1000 bytes at most a call.
inline const uint8_t* g_src;
inline size_t g_left;
inline ssize_t mem_recv(int, void* b, size_t n, int) {
  size_t k = n < g_left ? n : g_left;
  if (k > 1000) k = 1000;
  std::memcpy(b, g_src, k);
  g_src += k;
  g_left -= k;
  return static_cast<ssize_t>(k);
}
inline const IoOps kMemIo{libc_sendmsg, mem_recv, libc_poll, now_ns};

// Decodes a captured wire; *err: the errno a read failed with (0: none). The decoder
// gets memory for a second zstd stream and 8 MiB windows when it asks, unless
// `second_zstd` is false; `extra`, if given, is the memory it asks (to count or refuse).
inline std::vector<uint8_t> decode(const std::vector<uint8_t>& wire, int* err, size_t read_size = 70000,
                                   bool second_zstd = true, Extra* given = nullptr) {
  Workspace ws(rx_stream_size());
  RxStream rx{};
  Extra own;
  Extra& extra = given ? *given : own;
  REQUIRE(rx_stream_init(rx, ws.mem, ws.size));
  if (second_zstd) rx.extra = extra.mem();
  g_src = wire.data();
  g_left = wire.size();
  std::vector<uint8_t> out, buf(read_size);
  *err = 0;
  for (;;) {
    iovec v{buf.data(), buf.size()};
    ssize_t k = rx_read(rx, kMemIo, kNoMeter, -1, &v, 1, 0);
    if (k < 0) {
      *err = errno;
      break;
    }
    if (k == 0) break;
    out.insert(out.end(), buf.begin(), buf.begin() + k);
  }
  return out;
}

// Text-like bytes (compress_test_util.h's fill_text).
inline std::vector<uint8_t> text(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  fill_text(rng, v.data(), n);
  return v;
}

// The windows the new zstd frames of a wire stream ask for, in order (first zstd
// stream, or with `second` the second's).
inline std::vector<uint64_t> zstd_windows(const std::vector<uint8_t>& w, bool second = false);

// Offsets of the frame headers in a wire stream.
inline std::vector<size_t> frames_of(const std::vector<uint8_t>& w) {
  std::vector<size_t> at;
  for (size_t i = kStreamHeaderSize; i + kFrameHeaderSize <= w.size();) {
    at.push_back(i);
    i += kFrameHeaderSize + get_le32(&w[i + 8]);
  }
  return at;
}

inline std::vector<uint64_t> zstd_windows(const std::vector<uint8_t>& w, bool second) {
  std::vector<uint64_t> out;
  for (size_t at : frames_of(w)) {
    uint8_t flags = w[at + 1];
    if (w[at] != static_cast<uint8_t>(Method::Zstd) || !(flags & kFlagNewStream) || bool(flags & kFlagZstd2) != second)
      continue;
    out.push_back(zstd_frame_window(&w[at + kFrameHeaderSize], get_le32(&w[at + 8])));
  }
  return out;
}

}  // namespace compress_test
