// SPDX-License-Identifier: MIT
// Copying plain data that another thread may rewrite meanwhile (seqlock readers and
// writers): word by word with atomic accesses, so that a torn copy is a value the caller
// discards after checking its sequence, never a data race. Loads are acquire (a sequence
// read after them is not read earlier), stores release (a sequence marked odd before them
// is seen first): plain moves on x86, and no fences (which TSan does not model). Sizes
// and addresses are multiples of 8.
#pragma once
#include <cstddef>
#include <cstdint>

namespace bonsai {

inline void words_load(void* dst, const void* src, size_t bytes) noexcept {
  auto* d = static_cast<uint64_t*>(dst);
  const auto* s = static_cast<const uint64_t*>(src);
  for (size_t i = 0; i < bytes / 8; ++i) d[i] = __atomic_load_n(&s[i], __ATOMIC_ACQUIRE);
}

inline void words_store(void* dst, const void* src, size_t bytes) noexcept {
  auto* d = static_cast<uint64_t*>(dst);
  const auto* s = static_cast<const uint64_t*>(src);
  for (size_t i = 0; i < bytes / 8; ++i) __atomic_store_n(&d[i], s[i], __ATOMIC_RELEASE);
}

}  // namespace bonsai
