// SPDX-License-Identifier: MIT
// Resolution of glibc's functions (see real.h): by hand (sys/next_symbol.h), else with
// dlsym -- itself looked up, not linked (sys/late_bound.h: glibc has it in libc only
// since 2.34, in libdl before, which a program need not load). A missing
// symbol resolves to a stub that fails with ENOSYS, so a wrapper never calls through a
// null pointer.
#include "interpose/real.h"

#include <cerrno>
#include <dlfcn.h>
#include <type_traits>

#include "log/blog.h"
#include "sys/late_bound.h"
#include "sys/next_symbol.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
namespace bonsai::real {
namespace {

template <typename Ret>
Ret enosys_result() {
  errno = ENOSYS;
  if constexpr (std::is_void_v<Ret>) return;
  else if constexpr (std::is_pointer_v<Ret>) return nullptr;
  else if constexpr (sizeof(Ret) == sizeof(size_t) && Ret(-1) > Ret(0)) return 0;  // size_t: 0 items
  else return Ret(-1);
}

constinit LateSlot g_dlsym{0};

// dlsym(RTLD_NEXT, name) through libc's dlsym, if this process has one: called from
// here, so RTLD_NEXT means the objects after this library.
void* dlsym_next(const char* name) noexcept {
  auto fn = late_fn<void* (*)(void*, const char*)>(g_dlsym, "dlsym");
  return fn ? fn(RTLD_NEXT, name) : nullptr;
}

}  // namespace

#define BONSAI_X(ret, name, params, args)                                            \
  constinit std::atomic<name##_fn> name##_ptr{nullptr};                              \
  namespace {                                                                        \
  [[maybe_unused]] ret name##_missing params { return enosys_result<ret>(); }                  \
  }                                                                                  \
  name##_fn resolve_##name() noexcept {                                              \
    int saved_errno = errno; /* the first call of a wrapper: the caller's errno */   \
    void* p = next_symbol(#name); /* no lock, no loader: a walk of its list */      \
    auto f = reinterpret_cast<name##_fn>(p ? p : dlsym_next(#name));                \
    if (!f) {                                                                        \
      BONSAI_LOG_ONCE(LogLevel::Info, "glibc has no %s: calls to it fail with ENOSYS", #name); \
      f = name##_missing;                                                            \
    }                                                                                \
    name##_fn none = nullptr; /* a replacement installed meanwhile (strict) stays */ \
    name##_ptr.compare_exchange_strong(none, f, std::memory_order_relaxed);          \
    errno = saved_errno;                                                             \
    return f;                                                                        \
  }
BONSAI_REAL_SYMBOLS(BONSAI_X)
#undef BONSAI_X

void resolve_eager() noexcept {
#define BONSAI_Z(name) \
  if (!name##_ptr.load(std::memory_order_relaxed)) resolve_##name();
  BONSAI_REAL_EAGER(BONSAI_Z)
#undef BONSAI_Z
}

void resolve_all() noexcept {
#define BONSAI_X(ret, name, params, args) \
  if (!name##_ptr.load(std::memory_order_relaxed)) resolve_##name();
  BONSAI_REAL_SYMBOLS(BONSAI_X)
#undef BONSAI_X
}

}  // namespace bonsai::real
