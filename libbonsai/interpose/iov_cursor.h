// SPDX-License-Identifier: MIT
// The iovec cursor: a caller's vector cut into pieces, each a bounded array on the
// stack covering at most one chunk of it, walked front to back (wrap_vec.h's shapes
// make one real call per piece). Pure: no system call, no allocation.
#pragma once
#include <climits>
#include <cstddef>
#include <sys/types.h>
#include <sys/uio.h>

namespace bonsai::wrap {

inline constexpr int kPieceIov = 64;     // entries of one piece (1 KiB of stack)
inline constexpr long kIovMax = 1024;    // the kernel's UIO_MAXIOV

// Total length of a vector the kernel would accept. @return false when it would
// refuse it (count, overflow): then it is passed on untouched, as one call.
inline bool iov_sum(const iovec* v, long count, size_t& total) noexcept {
  total = 0;
  if (count < 0 || count > kIovMax || (count > 0 && !v)) return false;
  for (long i = 0; i < count; ++i) {
    if (__builtin_add_overflow(total, v[i].iov_len, &total)) return false;
  }
  return total <= static_cast<size_t>(SSIZE_MAX);
}

// Walks the caller's vector; piece() fills `out` with the entries covering bytes
// [off, off + len) (off never goes back) and returns how many bytes they cover:
// less than `len` only when kPieceIov entries are not enough.
class IovCursor {
 public:
  IovCursor(const iovec* v, long count) noexcept : v_(v), count_(count) {}

  size_t piece(size_t off, size_t len, iovec* out, int& out_count) noexcept {
    while (pos_ < off && idx_ < count_) {  // skip what earlier pieces moved
      size_t left = v_[idx_].iov_len - skip_;
      size_t step = off - pos_ < left ? off - pos_ : left;
      skip_ += step;
      pos_ += step;
      if (skip_ == v_[idx_].iov_len) ++idx_, skip_ = 0;
    }
    size_t covered = 0;
    int k = 0;
    for (long i = idx_, s = static_cast<long>(skip_); i < count_ && covered < len && k < kPieceIov; ++i, s = 0) {
      size_t avail = v_[i].iov_len - static_cast<size_t>(s);
      if (!avail) continue;
      size_t take = len - covered < avail ? len - covered : avail;
      out[k++] = iovec{static_cast<char*>(v_[i].iov_base) + s, take};
      covered += take;
    }
    out_count = k;
    return covered;
  }

 private:
  const iovec* v_;
  long count_;
  long idx_ = 0;     // entry holding byte pos_
  size_t skip_ = 0;  // bytes of v_[idx_] before pos_
  size_t pos_ = 0;
};

}  // namespace bonsai::wrap
