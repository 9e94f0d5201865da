// SPDX-License-Identifier: MIT
// The fast path, the first statement of every wrapper (BONSAI_FAST, BONSAI_FAST_ZC,
// BONSAI_FAST_CREDIT): when the call needs nothing from us, a tail call into glibc
// made before anything (a lambda, a frame) is built for the slow path. Cost: one
// acquire load and one table lookup; no allocation, no lock, errno untouched.
#pragma once
#include <cstddef>
#include <cstdint>
#include <sys/types.h>

#include "abi/calls.h"
#include "bucket/limits_view.h"
#include "runtime/limiter_state.h"
#include "sys/lane_add.h"

namespace bonsai::wrap {

// True when the call needs nothing from us: set up, no limit on it, nobody counting,
// no limits that may change. Then the wrapper tail-calls glibc with no frame of its
// own (the shapes of wrap.h keep everything else in noinline slow paths).
inline bool unlimited(CallId id) noexcept {
  const LimitsView* v = g_limiter.fast_view.load(std::memory_order_acquire);
  return v && v->table.bucket_of[static_cast<size_t>(id)][0] == kNoBucket;
}

// The same for a zero-copy call, which is also charged as a read (`src`) of its
// source: both lookups in the one view.
inline bool unlimited(CallId id, CallId src) noexcept {
  const LimitsView* v = g_limiter.fast_view.load(std::memory_order_acquire);
  return v && v->table.bucket_of[static_cast<size_t>(id)][0] == kNoBucket &&
         v->table.bucket_of[static_cast<size_t>(src)][0] == kNoBucket;
}

// The limited fast path: this thread still holds prepaid credit on the call's
// bucket and the transfer is smaller than a batch, so no wait and no settling can
// be needed. @return kUnlimited (no limit on the call: just call glibc), the
// credit to spend after the call, or nullptr to take the full path.
inline int64_t* const kUnlimited = reinterpret_cast<int64_t*>(alignof(int64_t) - 1);

inline int64_t* credit_fast(CallId id, size_t n) noexcept {
  const LimitsView* v = g_limiter.fast_view.load(std::memory_order_acquire);
  if (!v) return nullptr;
  uint8_t b = v->table.bucket_of[static_cast<size_t>(id)][0];
  if (b == kNoBucket) return kUnlimited;
  if (t_thread.credit_view != v) return nullptr;
  const BucketParams& p = v->params[b];
  int64_t* credit = &t_thread.credit[b];
  // The credit covers the whole transfer: no call moves bytes it has not paid for.
  if (*credit <= 0 || n > static_cast<size_t>(*credit) || p.per_call) return nullptr;
  return credit;
}

// Spends `r` bytes of the credit returned by credit_fast. @return r.
inline ssize_t credit_spend(int64_t* credit, ssize_t r) noexcept {
  if (r > 0) lane_add(*credit, -r);
  return r;
}

// First statement of every wrapper: the fast path, a tail call into glibc made
// before anything (a lambda, a frame) is built for the slow path.
#define BONSAI_FAST(id, name, args)                                                  \
  if (::bonsai::wrap::unlimited(::bonsai::CallId::id)) [[likely]] return ::bonsai::real::name args

// The same for a zero-copy call: neither its own bucket nor `src`'s (its source read).
#define BONSAI_FAST_ZC(id, src, name, args)                                          \
  if (::bonsai::wrap::unlimited(::bonsai::CallId::id, src)) [[likely]] return ::bonsai::real::name args

// The same for a transfer of `n` bytes, with one look at the limits: also goes ahead
// on this thread's prepaid credit (one unlocked subtraction after the call) when no
// wait can be needed.
#define BONSAI_FAST_CREDIT(id, name, n, args)                                        \
  if (int64_t* bonsai_credit_ = ::bonsai::wrap::credit_fast(::bonsai::CallId::id, n)) { \
    if (bonsai_credit_ == ::bonsai::wrap::kUnlimited) return ::bonsai::real::name args;   \
    return ::bonsai::wrap::credit_spend(bonsai_credit_, ::bonsai::real::name args);   \
  }

}  // namespace bonsai::wrap
