// SPDX-License-Identifier: MIT
// glibc's cancellation hooks, looked up on first use (see cancel_cleanup.h).
#include "sys/cancel_cleanup.h"

#if defined(__GLIBC__)
#include "sys/late_bound.h"

namespace bonsai {
namespace {
constinit LateSlot g_reg{0}, g_unreg{0}, g_next{0};
}  // namespace

CancelHooks cancel_hooks() noexcept {
  using Fn = void (*)(__pthread_unwind_buf_t*);
  CancelHooks h{late_fn<Fn>(g_reg, "__pthread_register_cancel"), late_fn<Fn>(g_unreg, "__pthread_unregister_cancel"),
                late_fn<Fn>(g_next, "__pthread_unwind_next")};
  if (!h.reg || !h.unreg || !h.next) return CancelHooks{nullptr, nullptr, nullptr};
  return h;
}

}  // namespace bonsai
#endif
