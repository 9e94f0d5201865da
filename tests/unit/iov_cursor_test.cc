// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/interpose/iov_cursor.h: iov_sum (the vector the kernel would
// accept, and its length) and IovCursor (a caller's vector cut into pieces of at most
// a chunk, each at most kPieceIov entries): the pieces, laid end to end, are the
// caller's bytes in order, whatever the chunk and however far each call got.
#include <catch2/catch.hpp>

#include <climits>
#include <cstdint>
#include <vector>

#include "interpose/iov_cursor.h"

using bonsai::wrap::iov_sum;
using bonsai::wrap::IovCursor;
using bonsai::wrap::kIovMax;
using bonsai::wrap::kPieceIov;

namespace {

// A caller's vector over one buffer whose byte i holds i % 251: entries of the given
// lengths, laid one after the other.
struct Vec {
  std::vector<char> bytes;
  std::vector<iovec> v;
  explicit Vec(const std::vector<size_t>& lens) {
    size_t total = 0;
    for (size_t n : lens) total += n;
    bytes.resize(total + 1);
    for (size_t i = 0; i < total; ++i) bytes[i] = static_cast<char>(i % 251);
    size_t at = 0;
    for (size_t n : lens) {
      v.push_back(iovec{bytes.data() + at, n});
      at += n;
    }
  }
  long count() const { return static_cast<long>(v.size()); }
};

// The bytes a piece covers, in order.
std::vector<char> flatten(const iovec* out, int k) {
  std::vector<char> b;
  for (int i = 0; i < k; ++i) {
    REQUIRE(out[i].iov_len > 0);  // no empty entry is handed to the kernel
    const char* p = static_cast<const char*>(out[i].iov_base);
    b.insert(b.end(), p, p + out[i].iov_len);
  }
  return b;
}

std::vector<char> expected(const Vec& v, size_t off, size_t len) {
  return std::vector<char>(v.bytes.begin() + static_cast<long>(off), v.bytes.begin() + static_cast<long>(off + len));
}

}  // namespace

TEST_CASE("iov_sum: the length of a vector the kernel accepts", "[iov_cursor]") {
  size_t total = 99;
  CHECK(iov_sum(nullptr, 0, total));
  CHECK(total == 0);

  Vec v({3, 0, 5, 2});
  CHECK(iov_sum(v.v.data(), v.count(), total));
  CHECK(total == 10);
}

TEST_CASE("iov_sum: a vector the kernel refuses is reported", "[iov_cursor]") {
  size_t total;
  CHECK_FALSE(iov_sum(nullptr, 1, total));  // EFAULT
  iovec one{nullptr, 1};
  CHECK_FALSE(iov_sum(&one, -1, total));  // EINVAL: negative count
  std::vector<iovec> many(static_cast<size_t>(kIovMax) + 1, iovec{nullptr, 0});
  CHECK(iov_sum(many.data(), kIovMax, total));
  CHECK_FALSE(iov_sum(many.data(), kIovMax + 1, total));  // more than UIO_MAXIOV
  iovec wrap[2] = {{nullptr, SIZE_MAX / 2 + 1}, {nullptr, SIZE_MAX / 2 + 1}};
  CHECK_FALSE(iov_sum(wrap, 2, total));  // the sum overflows
  iovec big{nullptr, static_cast<size_t>(SSIZE_MAX) + 1};
  CHECK_FALSE(iov_sum(&big, 1, total));  // more than a call can return
  iovec max{nullptr, static_cast<size_t>(SSIZE_MAX)};
  CHECK(iov_sum(&max, 1, total));
}

TEST_CASE("IovCursor: pieces across entries, empty entries skipped", "[iov_cursor]") {
  Vec v({3, 0, 5, 2});
  IovCursor cur(v.v.data(), v.count());
  iovec out[kPieceIov];
  int k = -1;

  CHECK(cur.piece(0, 4, out, k) == 4);  // 3 bytes of entry 0, 1 of entry 2
  CHECK(k == 2);
  CHECK(flatten(out, k) == expected(v, 0, 4));

  CHECK(cur.piece(4, 4, out, k) == 4);  // inside entry 2
  CHECK(k == 1);
  CHECK(out[0].iov_base == v.bytes.data() + 4);
  CHECK(flatten(out, k) == expected(v, 4, 4));

  CHECK(cur.piece(8, 4, out, k) == 2);  // the vector ends: what is left
  CHECK(k == 1);
  CHECK(flatten(out, k) == expected(v, 8, 2));

  CHECK(cur.piece(10, 4, out, k) == 0);  // past the end: nothing
  CHECK(k == 0);
}

TEST_CASE("IovCursor: a piece holds at most kPieceIov entries", "[iov_cursor]") {
  const auto n = static_cast<size_t>(kPieceIov);
  Vec v(std::vector<size_t>(200, 1));
  IovCursor cur(v.v.data(), v.count());
  iovec out[kPieceIov];
  int k = 0;
  CHECK(cur.piece(0, 1000, out, k) == n);
  CHECK(k == kPieceIov);
  CHECK(flatten(out, k) == expected(v, 0, n));
  CHECK(cur.piece(n, 1000, out, k) == n);
  CHECK(flatten(out, k) == expected(v, n, n));
}

TEST_CASE("IovCursor: pieces laid end to end are the caller's bytes", "[iov_cursor]") {
  const std::vector<std::vector<size_t>> shapes = {
      {1}, {7, 0, 0, 13}, {4096, 1, 4095, 0, 8192}, {0, 0, 5}, std::vector<size_t>(130, 3), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
  };
  for (const auto& lens : shapes) {
    for (size_t chunk : {size_t{1}, size_t{2}, size_t{5}, size_t{64}, size_t{4096}, size_t{1} << 20}) {
      // `short_by`: each real call moves that many bytes less than the piece covered
      // (a short transfer), so the next piece starts inside the last one.
      for (size_t short_by : {size_t{0}, size_t{1}}) {
        Vec v(lens);
        size_t total;
        REQUIRE(iov_sum(v.v.data(), v.count(), total));
        IovCursor cur(v.v.data(), v.count());
        iovec out[kPieceIov];
        size_t off = 0;
        int steps = 0;
        while (off < total) {
          int k = 0;
          size_t want = total - off < chunk ? total - off : chunk;
          size_t got = cur.piece(off, want, out, k);
          INFO("entries " << lens.size() << ", chunk " << chunk << ", off " << off);
          REQUIRE(got > 0);
          REQUIRE(got <= want);
          REQUIRE(k <= kPieceIov);
          REQUIRE(flatten(out, k) == expected(v, off, got));
          off += got > short_by ? got - short_by : got;
          REQUIRE(++steps < 1000000);
        }
        CHECK(off == total);
      }
    }
  }
}
