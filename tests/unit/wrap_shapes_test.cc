// SPDX-License-Identifier: MIT
// Unit tests of the wrapper shapes (libbonsai/interpose/wrap.h) with a fake real call:
// a transfer within a chunk is one call, a larger one is split into chunks on a file
// (each paid before it moves, one result), clamped to one chunk on a non-blocking
// descriptor and for a pipe's read, made whole when it must not be cut; a short piece or an error ends it, the first piece's errno
// kept when nothing moved; what moved is charged and counted once.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include "interpose/wrap.h"

#include "runtime_test_util.h"

using namespace bonsai;
using namespace bonsai::test;

namespace {

constexpr size_t kChunk = 512 * 1024;  // write=64MiB/s: a chunk is rate/128

struct Fake {
  std::vector<std::pair<size_t, size_t>> calls;  // (offset, length) of each real call
  size_t short_at = SIZE_MAX;                     // the call from this offset moves half
  size_t fail_at = SIZE_MAX;                      // the call from this offset fails, EIO
  ssize_t operator()(size_t off, size_t len) {
    calls.emplace_back(off, len);
    if (off == fail_at) {
      errno = EIO;
      return -1;
    }
    return static_cast<ssize_t>(off == short_at ? len / 2 : len);
  }
};

// A regular file and a pipe to shape calls on (the fake never touches them).
struct Fds {
  int file = -1, pipe_r = -1, pipe_w = -1;
  Fds() {
    std::FILE* f = std::tmpfile();
    REQUIRE(f);
    file = dup(fileno(f));
    std::fclose(f);
    int p[2];
    REQUIRE(pipe(p) == 0);
    pipe_r = p[0];
    pipe_w = p[1];
  }
  ~Fds() {
    close(file);
    close(pipe_r);
    close(pipe_w);
  }
};

}  // namespace

TEST_CASE("wrap_shapes: a transfer within a chunk is one real call", "[wrap_shapes]") {
  limiter_fresh("write=64MiB/s,read=64MiB/s");
  Fds fds;
  Fake f;
  REQUIRE(wrap::transfer(CallId::write, fds.file, 4096, false, true, 0, f) == 4096);
  REQUIRE(f.calls.size() == 1);
  CHECK(f.calls[0] == std::make_pair(size_t{0}, size_t{4096}));
}

TEST_CASE("wrap_shapes: a large write to a file is split into chunks, one result", "[wrap_shapes]") {
  limiter_fresh("write=64MiB/s");
  Fds fds;
  Fake f;
  uint64_t tat0 = g_limiter.buckets[0].tat_ns.load();
  REQUIRE(wrap::transfer(CallId::write, fds.file, 4 * kChunk + 100, false, true, 0, f) ==
          static_cast<ssize_t>(4 * kChunk + 100));
  REQUIRE(f.calls.size() == 5);
  for (size_t i = 0; i < 4; ++i) CHECK(f.calls[i] == std::make_pair(i * kChunk, kChunk));
  CHECK(f.calls[4] == std::make_pair(4 * kChunk, size_t{100}));
  // Every byte was taken from the bucket (about 32 ms of rate), none twice.
  uint64_t taken = g_limiter.buckets[0].tat_ns.load() - std::max(tat0, uint64_t{1});
  CHECK(taken >= bucket_cost_ns(g_limiter.view.load()->params[0], 4 * kChunk));
}

TEST_CASE("wrap_shapes: a short piece or an error ends a split transfer", "[wrap_shapes]") {
  limiter_fresh("write=64MiB/s");
  Fds fds;
  SECTION("short second piece: what moved") {
    Fake f;
    f.short_at = kChunk;
    CHECK(wrap::transfer(CallId::write, fds.file, 3 * kChunk, false, true, 0, f) ==
          static_cast<ssize_t>(kChunk + kChunk / 2));
    CHECK(f.calls.size() == 2);
  }
  SECTION("error on the second piece: the bytes moved before it") {
    Fake f;
    f.fail_at = kChunk;
    CHECK(wrap::transfer(CallId::write, fds.file, 3 * kChunk, false, true, 0, f) == static_cast<ssize_t>(kChunk));
  }
  SECTION("error on the first piece: -1 and its errno") {
    Fake f;
    f.fail_at = 0;
    errno = 0;
    CHECK(wrap::transfer(CallId::write, fds.file, 3 * kChunk, false, true, 0, f) == -1);
    CHECK(errno == EIO);
    CHECK(f.calls.size() == 1);
  }
}

TEST_CASE("wrap_shapes: non-blocking writes and pipe reads are clamped to one chunk; an uncut read goes whole",
          "[wrap_shapes]") {
  limiter_fresh("write=64MiB/s,read=64MiB/s");
  Fds fds;
  REQUIRE(fcntl(fds.pipe_w, F_SETFL, O_NONBLOCK) == 0);
  Fake w;  // never a fake EAGAIN: the transfer is shortened
  CHECK(wrap::transfer(CallId::write, fds.pipe_w, 3 * kChunk, false, true, 0, w) == static_cast<ssize_t>(kChunk));
  REQUIRE(w.calls.size() == 1);
  CHECK(w.calls[0].second == kChunk);
  Fake p;  // a pipe's read returns what is there: one chunk at most
  CHECK(wrap::transfer(CallId::read, fds.pipe_r, 3 * kChunk, false, false, 0, p) == static_cast<ssize_t>(kChunk));
  REQUIRE(p.calls.size() == 1);
  Fake r;
  CHECK(wrap::transfer(CallId::read, fds.file, 3 * kChunk, false, false, 0, r, false) ==
        static_cast<ssize_t>(3 * kChunk));
  REQUIRE(r.calls.size() == 1);  // a read that must not be cut: whole, its time taken after
  CHECK(r.calls[0].second == 3 * kChunk);
}

TEST_CASE("wrap_shapes: an unlimited call is passed through whole", "[wrap_shapes]") {
  limiter_fresh("read=64MiB/s");
  Fds fds;
  Fake f;
  CHECK(wrap::transfer(CallId::write, fds.file, 10 * kChunk, false, true, 0, f) == static_cast<ssize_t>(10 * kChunk));
  CHECK(f.calls.size() == 1);
}
