// SPDX-License-Identifier: MIT
// A read on a compressed stream hands out every frame already buffered whole, as a
// plain socket hands out all it holds, and never makes another recv once it has bytes
// (which could block, or fail and lose them).
#include <catch2/catch.hpp>
#include <cerrno>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <vector>

#include "compress_stream_util.h"

using namespace bonsai::compress;
using namespace compress_test;

namespace {

constexpr size_t kWrite = 16 * 1024;
constexpr unsigned kWrites = 8;

// The wire of kWrites writes of kWrite bytes of text at fixed:zstd:1 (one frame each).
std::vector<uint8_t> eight_frames(const std::vector<uint8_t>& data) {
  Tx t("fixed:zstd:1");
  uint8_t level = t.tx.policy.level;
  auto wire = encode(t, data, [](unsigned) { return kWrite; }, [&](unsigned) { return level; });
  REQUIRE(frames_of(wire).size() == kWrites);
  return wire;
}

// A connected pair whose receiving end times out after 2 s (a read that blocks on a
// bug fails with EAGAIN instead of hanging the test).
struct Pair {
  Pair() {
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    timeval tv{2, 0};
    REQUIRE(setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
  }
  ~Pair() {
    close(sv[0]);
    close(sv[1]);
  }
  void send(const uint8_t* p, size_t n) const { REQUIRE(::write(sv[0], p, n) == static_cast<ssize_t>(n)); }
  int sv[2];
};

struct Rx {
  Rx() : ws(rx_stream_size()) {
    REQUIRE(rx_stream_init(rx, ws.mem, ws.size));
    rx.extra = extra.mem();  // a second zstd stream and 8 MiB windows, as the pool gives them
  }
  ssize_t read(int fd, std::vector<uint8_t>& buf, int flags = 0) {
    iovec v{buf.data(), buf.size()};
    return rx_read(rx, kLibcIo, kNoMeter, fd, &v, 1, flags);
  }
  Workspace ws;
  Extra extra;
  RxStream rx{};
};

}  // namespace

TEST_CASE("a read hands out every whole frame already buffered", "[compress]") {
  auto data = text(7, kWrite * kWrites);
  auto wire = eight_frames(data);
  REQUIRE(wire.size() < kRxInCap);  // one recv takes it all
  Pair p;
  p.send(wire.data(), wire.size());
  Rx r;
  std::vector<uint8_t> buf(1 << 20);
  ssize_t k = r.read(p.sv[1], buf);
  REQUIRE(k == static_cast<ssize_t>(data.size()));
  CHECK(std::equal(data.begin(), data.end(), buf.begin()));

  SECTION("a smaller buffer is filled, the rest comes next") {
    Rx r2;
    Pair p2;
    p2.send(wire.data(), wire.size());
    std::vector<uint8_t> small(3 * kWrite + 100);
    REQUIRE(r2.read(p2.sv[1], small) == static_cast<ssize_t>(small.size()));
    CHECK(std::equal(small.begin(), small.end(), data.begin()));
    REQUIRE(r2.read(p2.sv[1], buf) == static_cast<ssize_t>(data.size() - small.size()));
    CHECK(std::equal(data.begin() + static_cast<long>(small.size()), data.end(), buf.begin()));
  }
}

TEST_CASE("a read with bytes never waits for a frame that is not whole", "[compress]") {
  auto data = text(8, kWrite * kWrites);
  auto wire = eight_frames(data);
  Pair p;
  p.send(wire.data(), wire.size() - 5);  // the last frame lacks 5 bytes
  Rx r;
  std::vector<uint8_t> buf(1 << 20);
  ssize_t k = r.read(p.sv[1], buf);  // a recv for the last frame would time out (EAGAIN)
  REQUIRE(k == static_cast<ssize_t>(kWrite * (kWrites - 1)));
  CHECK(std::equal(buf.begin(), buf.begin() + k, data.begin()));
  p.send(wire.data() + wire.size() - 5, 5);
  REQUIRE(r.read(p.sv[1], buf) == static_cast<ssize_t>(kWrite));
  CHECK(std::equal(buf.begin(), buf.begin() + static_cast<long>(kWrite), data.end() - static_cast<long>(kWrite)));
}

TEST_CASE("a corrupt frame after good ones: their bytes first, then ECONNRESET", "[compress]") {
  auto data = text(9, kWrite * kWrites);
  auto wire = eight_frames(data);
  size_t third = frames_of(wire)[2];
  SECTION("its header") { wire[third] = 0x7f; }  // no such method
  // Its payload: a zstd block whose type is the reserved one (a continuation frame
  // starts with a block header, the type in bits 1-2).
  SECTION("its payload") { wire[third + kFrameHeaderSize] |= 0x06; }
  Pair p;
  p.send(wire.data(), wire.size());
  Rx r;
  std::vector<uint8_t> buf(1 << 20);
  errno = 1234;
  ssize_t k = r.read(p.sv[1], buf);
  REQUIRE(k == static_cast<ssize_t>(2 * kWrite));
  CHECK(errno == 1234);  // a read that succeeds leaves errno alone
  CHECK(std::equal(buf.begin(), buf.begin() + k, data.begin()));
  CHECK(r.read(p.sv[1], buf) == -1);
  CHECK(errno == ECONNRESET);
}

TEST_CASE("MSG_PEEK still shows one frame's bytes and consumes nothing", "[compress]") {
  auto data = text(10, kWrite * kWrites);
  auto wire = eight_frames(data);
  Pair p;
  p.send(wire.data(), wire.size());
  Rx r;
  std::vector<uint8_t> buf(1 << 20);
  ssize_t k = r.read(p.sv[1], buf, MSG_PEEK);
  REQUIRE(k == static_cast<ssize_t>(kWrite));
  CHECK(std::equal(buf.begin(), buf.begin() + k, data.begin()));
  REQUIRE(r.read(p.sv[1], buf) == static_cast<ssize_t>(data.size()));
  CHECK(std::equal(data.begin(), data.end(), buf.begin()));
}
