// SPDX-License-Identifier: MIT
// The send buffer of non-blocking senders (#12 item 2): tx_write with MSG_DONTWAIT
// against an injected socket that takes a chosen number of bytes and then refuses
// (EAGAIN) at every point of the wire stream, short sends at random, blocking writes
// and flushes mixed in; the receiver reads the same wire through an injected recv
// that also stops (EAGAIN) at every point. Output byte-exact, no byte lost or doubled,
// EAGAIN only when the send buffer is full.
#include <algorithm>
#include <catch2/catch.hpp>

#include "test_scale.h"
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "compress/rx_stream.h"
#include "compress/tx_send_buffer.h"
#include "compress/tx_stream.h"
#include "compress/wire_format.h"
#include "compress_test_util.h"

using namespace bonsai::compress;
using namespace compress_test;

namespace {

// The fake socket: `wire` is what it took. It takes up to `budget` bytes (then EAGAIN
// until the budget is raised; a blocking sender's poll raises it), and with
// `short_sends` at most a random part of each call. One test at a time (globals: IoOps
// are plain function pointers).
struct FakeSocket {
  std::vector<uint8_t> wire;
  size_t budget = SIZE_MAX;
  bool short_sends = false;
  bool reset = false;  // the peer is gone: every send fails with EPIPE
  std::mt19937 rng{1};
  size_t calls = 0, refused = 0, polls = 0;
  // receiving side
  size_t rd_pos = 0, rd_budget = SIZE_MAX;
};
FakeSocket* g_sock;

ssize_t fake_sendmsg(int, const msghdr* m, int) {
  FakeSocket& s = *g_sock;
  ++s.calls;
  if (s.reset) {
    errno = EPIPE;
    return -1;
  }
  size_t want = iov_sum(m->msg_iov, static_cast<int>(m->msg_iovlen));
  size_t room = s.budget > s.wire.size() ? s.budget - s.wire.size() : 0;
  if (want && !room) {
    ++s.refused;
    errno = EAGAIN;
    return -1;
  }
  size_t take = std::min(want, room);
  if (s.short_sends && take > 1) take = 1 + s.rng() % take;
  size_t left = take;
  for (size_t i = 0; i < m->msg_iovlen && left; ++i) {
    size_t k = std::min(left, m->msg_iov[i].iov_len);
    auto* p = static_cast<const uint8_t*>(m->msg_iov[i].iov_base);
    s.wire.insert(s.wire.end(), p, p + k);
    left -= k;
  }
  return static_cast<ssize_t>(take);
}

ssize_t fake_recv(int, void* b, size_t n, int flags) {
  FakeSocket& s = *g_sock;
  size_t avail = std::min(s.wire.size(), s.rd_budget) - std::min(s.rd_pos, std::min(s.wire.size(), s.rd_budget));
  if (!avail) {
    if (s.rd_pos >= s.wire.size()) return 0;  // the sender is done: end of stream
    errno = EAGAIN;
    return -1;
  }
  size_t k = std::min(n, avail);
  std::memcpy(b, s.wire.data() + s.rd_pos, k);
  if (!(flags & MSG_PEEK)) s.rd_pos += k;
  return static_cast<ssize_t>(k);
}

int fake_poll(pollfd* p, nfds_t, int) {  // a blocking sender waits: the peer reads some
  ++g_sock->polls;
  g_sock->budget = g_sock->wire.size() + 1 + g_sock->rng() % 70000;
  p->revents = POLLOUT;
  return 1;
}

const IoOps kFakeIo{fake_sendmsg, fake_recv, fake_poll, now_ns};

struct Sender {
  explicit Sender(const char* policy) : levels(levels_default()), ws(tx_stream_size(levels)) {
    PolicyConfig p{};
    ok = policy_parse(policy, levels, p) == nullptr && tx_stream_init(tx, ws.mem, ws.size, &levels, p);
  }
  LevelList levels;
  Workspace ws;
  TxStream tx{};
  bool ok = false;
};

// Decodes everything on the fake wire, reading with MSG_DONTWAIT; the receiver's
// socket stops at `stop` once (EAGAIN), then goes on.
std::vector<uint8_t> decode(FakeSocket& s, size_t stop, std::mt19937& rng) {
  Workspace ws(rx_stream_size());
  RxStream rx{};
  std::vector<uint8_t> got;
  if (!rx_stream_init(rx, ws.mem, ws.size)) return got;
  compress_test::Extra extra;  // a second zstd stream and 8 MiB windows, as the pool gives them
  rx.extra = extra.mem();
  s.rd_pos = 0;
  s.rd_budget = stop;
  std::vector<uint8_t> buf(300000);
  for (int guard = 0; guard < 1000000; ++guard) {
    size_t n = 1 + rng() % buf.size();
    iovec v{buf.data(), n};
    ssize_t k = rx_read(rx, kFakeIo, kNoMeter, 0, &v, 1, MSG_DONTWAIT);
    if (k < 0 && errno == EAGAIN) {
      if (s.rd_budget == SIZE_MAX) break;  // nothing more will come
      s.rd_budget = SIZE_MAX;
      continue;
    }
    if (k <= 0) break;
    got.insert(got.end(), buf.begin(), buf.begin() + k);
  }
  return got;
}

// Writes `data` non-blocking in writes of the given sizes; the socket takes `cut`
// bytes, then refuses until the writer has been refused once, then takes all.
// @return false on a broken invariant (see the checks).
struct Run {
  bool ok = true;
  std::vector<uint8_t> sent;  // what tx_write reported taken, in order
  size_t eagains = 0;
};
Run write_nonblocking(Sender& snd, FakeSocket& sock, const std::vector<uint8_t>& data,
                      const std::vector<size_t>& sizes, size_t cut) {
  Run run;
  sock.budget = cut;
  size_t pos = 0, i = 0;
  while (pos < data.size()) {
    size_t n = std::min(sizes[i % sizes.size()], data.size() - pos);
    iovec v{const_cast<uint8_t*>(data.data() + pos), n};
    ssize_t r = tx_write(snd.tx, kFakeIo, kNoMeter, 0, &v, 1, MSG_DONTWAIT);
    if (r < 0) {
      if (errno != EAGAIN || tx_pending(snd.tx) == 0) return run.ok = false, run;  // EAGAIN only when full
      ++run.eagains;
      sock.budget = SIZE_MAX;  // the peer reads: writable again
      continue;
    }
    if (r == 0 || static_cast<size_t>(r) > n) return run.ok = false, run;
    run.sent.insert(run.sent.end(), data.begin() + pos, data.begin() + pos + r);
    pos += static_cast<size_t>(r);
    ++i;
  }
  sock.budget = SIZE_MAX;
  if (tx_flush(snd.tx, kFakeIo, kNoMeter, 0, MSG_DONTWAIT) != 0 || tx_pending(snd.tx)) run.ok = false;
  return run;
}

std::vector<uint8_t> text(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  fill_text(rng, v.data(), n);
  return v;
}

}  // namespace

TEST_CASE("non-blocking sender: the socket refuses at every point of the stream", "[compress]") {
  // Three writes: raw (small), compressed, incompressible (raw frame); then again.
  auto data = text(3, 9000);
  std::mt19937 noise(5);
  for (size_t k = 5000; k < 7000; ++k) data[k] = static_cast<uint8_t>(noise());
  std::vector<size_t> sizes{100, 4900, 2000, 2000};
  // The wire length without refusals: every cut point below it is tried.
  FakeSocket probe;
  g_sock = &probe;
  Sender s0("fixed:lz4");
  REQUIRE(s0.ok);
  Run r0 = write_nonblocking(s0, probe, data, sizes, SIZE_MAX);
  REQUIRE(r0.ok);
  REQUIRE(r0.eagains == 0);
  size_t wire_len = probe.wire.size();
  REQUIRE(wire_len > 0);
  REQUIRE(wire_len < data.size());  // the text part compressed
  size_t failures = 0, refused_runs = 0, tried = 0;
  std::mt19937 rng(7);
  // Sanitized builds (a Sender's codec memory costs ~10 ms there): every cut through the
  // stream's and first frame's headers, then every 7th.
  auto next_cut = [&](size_t cut) { return bonsai::test::kSanitized && cut >= 96 ? cut + 7 : cut + 1; };
  for (size_t cut = 0; cut <= wire_len; cut = next_cut(cut)) {
    ++tried;
    FakeSocket sock;
    g_sock = &sock;
    Sender s("fixed:lz4");
    Run r = write_nonblocking(s, sock, data, sizes, cut);
    std::vector<uint8_t> got = decode(sock, cut + rng() % 64, rng);
    bool good = r.ok && r.sent == data && got == data && s.tx.app_bytes == data.size();
    if (!good && ++failures < 4) {
      INFO("cut " << cut);
      CHECK(good);
    }
    refused_runs += r.eagains > 0;
  }
  CHECK(failures == 0);
  CHECK(refused_runs > tried / 2);  // the refusals did happen
}

TEST_CASE("non-blocking sender: short sends, EAGAIN, blocking writes and flushes mixed", "[compress]") {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    auto data = mixed_data(seed, 3 << 20);
    FakeSocket sock;
    sock.short_sends = true;
    sock.rng.seed(seed);
    g_sock = &sock;
    Sender s(seed % 2 ? "datarate" : "fixed:zstd:3");
    REQUIRE(s.ok);
    std::mt19937 rng(seed * 31);
    size_t pos = 0, eagain = 0, blocking = 0;
    bool ok = true;
    while (pos < data.size() && ok) {
      size_t n = log_size(rng, data.size() - pos);
      size_t h = n / 2;
      iovec v[2] = {{data.data() + pos, h}, {data.data() + pos + h, n - h}};
      bool block = rng() % 8 == 0;
      sock.budget = sock.wire.size() + rng() % 200000;  // the socket has this much room
      ssize_t r = tx_write(s.tx, kFakeIo, kNoMeter, 0, v, 2, block ? 0 : MSG_DONTWAIT);
      if (r < 0) {
        ok = errno == EAGAIN && !block && tx_pending(s.tx) > 0;
        ++eagain;
        continue;
      }
      ok = block ? static_cast<size_t>(r) == n : (r > 0 && static_cast<size_t>(r) <= n);
      blocking += block;
      pos += static_cast<size_t>(r);
      if (rng() % 4 == 0) {  // a readiness call flushes on the application's behalf
        sock.budget = sock.wire.size() + rng() % 100000;
        int e = tx_flush(s.tx, kFakeIo, kNoMeter, 0, MSG_DONTWAIT);
        ok = ok && (e == 0 || e == EAGAIN) && (e == 0) == (tx_pending(s.tx) == 0);
      }
    }
    sock.budget = SIZE_MAX;
    CHECK(ok);
    CHECK(tx_flush(s.tx, kFakeIo, kNoMeter, 0, MSG_DONTWAIT) == 0);
    CHECK(eagain > 0);
    CHECK(blocking > 0);
    std::mt19937 rr(seed);
    std::vector<uint8_t> got = decode(sock, sock.wire.size() / 3, rr);
    CHECK(got.size() == data.size());
    CHECK((got == data));
    CHECK(s.tx.wire_bytes == sock.wire.size());
  }
}

TEST_CASE("non-blocking sender: tiny and huge writes, memory bounded to one frame", "[compress]") {
  FakeSocket sock;
  g_sock = &sock;
  Sender s("fixed:zstd:1");
  REQUIRE(s.ok);
  auto big = text(9, 8 << 20);
  sock.budget = 1000;  // the socket is nearly full: one frame is taken, no more
  iovec v{big.data(), big.size()};
  ssize_t r = tx_write(s.tx, kFakeIo, kNoMeter, 0, &v, 1, MSG_DONTWAIT);
  CHECK(r == static_cast<ssize_t>(kMaxFrameRaw));
  CHECK(tx_pending(s.tx) > 0);
  CHECK(tx_pending(s.tx) <= kPendSize);
  r = tx_write(s.tx, kFakeIo, kNoMeter, 0, &v, 1, MSG_DONTWAIT);
  CHECK(r == -1);
  CHECK(errno == EAGAIN);
  sock.budget = SIZE_MAX;
  size_t pos = kMaxFrameRaw;
  while (pos < big.size()) {  // huge writes, then 1-byte writes at the end
    size_t n = pos + 100 < big.size() ? big.size() - pos - 100 : 1;
    iovec w{big.data() + pos, n};
    r = tx_write(s.tx, kFakeIo, kNoMeter, 0, &w, 1, MSG_DONTWAIT);
    REQUIRE(r > 0);
    pos += static_cast<size_t>(r);
  }
  std::mt19937 rng(2);
  CHECK((decode(sock, SIZE_MAX, rng) == big));
}

// Writes `v` whole through a socket that takes only `budget` bytes: the rest stays in
// the connection's send buffer.
void write_into_full_socket(FakeSocket& sock, Sender& s, iovec& v, size_t budget) {
  sock.budget = budget;
  REQUIRE(tx_write(s.tx, kFakeIo, kNoMeter, 0, &v, 1, MSG_DONTWAIT) == static_cast<ssize_t>(v.iov_len));
  REQUIRE(tx_pending(s.tx) > 0);
}

TEST_CASE("a forked child's view: the send buffer disowned, writes fail with EPIPE", "[compress]") {
  FakeSocket sock;
  g_sock = &sock;
  Sender s("fixed:lz4");
  REQUIRE(s.ok);
  auto data = text(4, 50000);
  iovec v{data.data(), data.size()};
  write_into_full_socket(sock, s, v, 10);
  tx_disown(s.tx, EPIPE);
  CHECK(tx_pending(s.tx) == 0);
  sock.budget = SIZE_MAX;
  size_t before = sock.wire.size();
  CHECK(tx_write(s.tx, kFakeIo, kNoMeter, 0, &v, 1, MSG_DONTWAIT) == -1);
  CHECK(errno == EPIPE);
  CHECK(tx_flush(s.tx, kFakeIo, kNoMeter, 0, MSG_DONTWAIT) == EPIPE);
  CHECK(sock.wire.size() == before);  // nothing sent twice
}

TEST_CASE("non-blocking sender: a socket that fails while bytes are buffered drops them, once", "[compress]") {
  FakeSocket sock;
  g_sock = &sock;
  Sender s("fixed:lz4");
  REQUIRE(s.ok);
  auto data = text(6, 50000);
  iovec v{data.data(), data.size()};
  write_into_full_socket(sock, s, v, 100);
  sock.reset = true;
  CHECK(tx_flush(s.tx, kFakeIo, kNoMeter, 0, MSG_DONTWAIT) == EPIPE);
  CHECK(tx_pending(s.tx) == 0);  // readiness stops waiting for bytes that cannot leave
  CHECK(tx_write(s.tx, kFakeIo, kNoMeter, 0, &v, 1, MSG_DONTWAIT) == -1);
  CHECK(errno == EPIPE);
  size_t calls = sock.calls;
  CHECK(tx_flush(s.tx, kFakeIo, kNoMeter, 0, MSG_DONTWAIT) == EPIPE);
  CHECK(sock.calls == calls);  // no further sends
}

namespace {

// A byte cap that must not wait (issue 53: WireMeter::nowait, as the library's meter of a
// non-blocking call): allow() gives what `tokens` hold now (at most `want`), 0 when none;
// charge() spends what moved. `asked` counts the calls, `refusals` the zeros.
struct FakeBucket {
  size_t tokens = 0;
  size_t granted = 0;  // total tokens given (the cap's allowance over the run)
  size_t spent = 0;
  size_t asked = 0, refusals = 0;
};
size_t bucket_allow(void* ctx, size_t want) {
  auto* b = static_cast<FakeBucket*>(ctx);
  ++b->asked;
  if (!b->tokens) {
    ++b->refusals;
    return 0;
  }
  return std::min(want, b->tokens);
}
void bucket_charge(void* ctx, ssize_t moved) {
  auto* b = static_cast<FakeBucket*>(ctx);
  if (moved <= 0) return;
  size_t m = static_cast<size_t>(moved);
  b->spent += m;
  b->tokens = m < b->tokens ? b->tokens - m : 0;
}
WireMeter refusing_meter(FakeBucket& b) {
  WireMeter m{bucket_allow, bucket_charge, &b, true, 1 << 20, nullptr, 0};
  m.nowait = true;
  return m;
}

}  // namespace

TEST_CASE("non-blocking sender under a cap that refuses: nothing waits, nothing lost, the cap holds", "[compress]") {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    auto data = mixed_data(seed, 2 << 20);
    FakeSocket sock;
    sock.short_sends = seed % 2 == 0;
    sock.rng.seed(seed);
    g_sock = &sock;
    Sender s(seed % 3 == 0 ? "fixed:lz4" : seed % 3 == 1 ? "fixed:zstd:3" : "datarate");
    REQUIRE(s.ok);
    FakeBucket bucket;
    WireMeter m = refusing_meter(bucket);
    std::mt19937 rng(seed * 17);
    size_t pos = 0, eagain = 0, refused_clean = 0, polls = 0;
    bool ok = true;
    for (int guard = 0; pos < data.size() && ok && guard < 200000; ++guard) {
      // The bucket's turn: nothing (a refusal), a little, or a quantum and more; now and
      // then other senders took what was left.
      if (rng() % 5 == 0) bucket.tokens = 0;
      size_t give = rng() % 3 == 0 ? 0 : rng() % 3 == 0 ? 1 + rng() % 300 : rng() % 40000;
      bucket.tokens += give;
      bucket.granted += give;
      sock.budget = rng() % 8 == 0 ? sock.wire.size() : SIZE_MAX;  // sometimes the socket is full too
      size_t n = log_size(rng, data.size() - pos);
      iovec v{data.data() + pos, n};
      uint64_t app0 = s.tx.app_bytes, wire0 = sock.wire.size();
      size_t pend0 = tx_pending(s.tx);
      ssize_t r = tx_write(s.tx, kFakeIo, m, 0, &v, 1, MSG_DONTWAIT);
      ok = sock.polls == polls;  // never waited for the socket either
      if (r < 0) {
        ok = ok && errno == EAGAIN;
        ++eagain;
        // Refused with nothing buffered: no chunk was taken into the stream.
        if (!pend0) ok = ok && s.tx.app_bytes == app0 && sock.wire.size() == wire0 && bucket.tokens == 0, ++refused_clean;
      } else {
        ok = ok && r > 0 && static_cast<size_t>(r) <= n;
        pos += static_cast<size_t>(r);
      }
      ok = ok && bucket.spent <= bucket.granted && sock.wire.size() == bucket.spent;  // every wire byte was allowed
      if (rng() % 4 == 0) {  // a readiness call flushes at the bucket's pace too
        sock.budget = SIZE_MAX;
        int e = tx_flush(s.tx, kFakeIo, m, 0, MSG_DONTWAIT);
        ok = ok && (e == 0 || e == EAGAIN) && (e == 0) == (tx_pending(s.tx) == 0);
        ok = ok && sock.wire.size() == bucket.spent;
      }
      polls = sock.polls;
    }
    INFO("seed " << seed);
    CHECK(ok);
    CHECK(pos == data.size());
    // The end: the bucket allows the rest, the send buffer empties.
    sock.budget = SIZE_MAX;
    bucket.tokens = SIZE_MAX / 2;
    CHECK(tx_flush(s.tx, kFakeIo, m, 0, MSG_DONTWAIT) == 0);
    CHECK(eagain > 0);
    CHECK(refused_clean > 0);
    CHECK(bucket.refusals > 0);
    std::mt19937 rr(seed);
    std::vector<uint8_t> got = decode(sock, sock.wire.size() / 2, rr);
    CHECK(got.size() == data.size());
    CHECK((got == data));
    CHECK(s.tx.wire_bytes == sock.wire.size());
  }
}

TEST_CASE("non-blocking sender under a cap: a frame the bucket allows in part keeps its rest", "[compress]") {
  FakeSocket sock;
  g_sock = &sock;
  Sender s("fixed:zstd:1");
  REQUIRE(s.ok);
  auto big = text(11, 1 << 20);
  FakeBucket bucket;
  WireMeter m = refusing_meter(bucket);
  iovec v{big.data(), big.size()};
  // No tokens: refused before anything is compressed.
  CHECK(tx_write(s.tx, kFakeIo, m, 0, &v, 1, MSG_DONTWAIT) == -1);
  CHECK(errno == EAGAIN);
  CHECK(s.tx.app_bytes == 0);
  CHECK(sock.wire.empty());
  // 100 tokens: one chunk taken, 100 wire bytes sent, the rest of its frame buffered.
  bucket.tokens = 100;
  CHECK(tx_write(s.tx, kFakeIo, m, 0, &v, 1, MSG_DONTWAIT) == static_cast<ssize_t>(kMaxFrameRaw));
  CHECK(sock.wire.size() == 100);
  CHECK(tx_pending(s.tx) > 0);
  // Still none: the next write is refused, the buffer untouched.
  size_t pend = tx_pending(s.tx);
  iovec w{big.data() + kMaxFrameRaw, big.size() - kMaxFrameRaw};
  CHECK(tx_write(s.tx, kFakeIo, m, 0, &w, 1, MSG_DONTWAIT) == -1);
  CHECK(errno == EAGAIN);
  CHECK(tx_pending(s.tx) == pend);
  // Tokens in drips: the flush sends exactly what each allows.
  while (tx_pending(s.tx)) {
    size_t before = sock.wire.size(), left = tx_pending(s.tx);
    bucket.tokens = 777;
    int e = tx_flush(s.tx, kFakeIo, m, 0, MSG_DONTWAIT);
    CHECK((e == 0 || e == EAGAIN));
    CHECK(sock.wire.size() - before == std::min<size_t>(777, left));
  }
  bucket.tokens = SIZE_MAX / 2;
  size_t pos = kMaxFrameRaw;
  while (pos < big.size()) {
    iovec x{big.data() + pos, big.size() - pos};
    ssize_t r = tx_write(s.tx, kFakeIo, m, 0, &x, 1, MSG_DONTWAIT);
    REQUIRE(r > 0);
    pos += static_cast<size_t>(r);
  }
  CHECK(tx_flush(s.tx, kFakeIo, m, 0, MSG_DONTWAIT) == 0);
  std::mt19937 rng(3);
  CHECK((decode(sock, SIZE_MAX, rng) == big));
}
