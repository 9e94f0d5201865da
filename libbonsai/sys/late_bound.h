// SPDX-License-Identifier: MIT
// A libc function the library calls but does not link: looked up by name on
// first use (sys/next_symbol.h) and kept. The glibc build so needs nothing newer than
// GLIBC_2.17 from the loader: a function glibc added later, or kept in libdl/libpthread
// before 2.34 (which a program need not load), is simply absent where it does not
// exist, and the caller does without it -- never a call through a null pointer.
// No lock, no allocation, errno kept; a racing first use looks the name up twice.
#pragma once
#include <atomic>
#include <cstdint>

#include "sys/next_symbol.h"

// The sanitizer builds (tests only, never shipped) link what the sanitizers intercept
// (pthread_mutex_trylock, dlopen): their interceptors are the definitions before this
// library, which a lookup of the objects after it would pass by (TSan then sees an
// unlock of a mutex it never saw taken).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BONSAI_SANITIZED 1
#else
#define BONSAI_SANITIZED 0
#endif

namespace bonsai {

// A slot for one name: zero-initialised (constinit), filled on first use.
using LateSlot = std::atomic<uintptr_t>;

// @return libc's function `name` (kept in `slot`), or nullptr if this process has none.
// `object`: a variable, looked up as the loader binds it (dlsym(RTLD_DEFAULT)): a
// program that refers to it has its own copy (a copy relocation), which libc then uses
// too, and libc's original is never written again.
inline void* late_symbol(LateSlot& slot, const char* name, bool object = false) noexcept {
  constexpr uintptr_t kMissing = 1;
  uintptr_t p = slot.load(std::memory_order_acquire);
  if (p == 0) [[unlikely]] {
    void* found = object ? default_symbol(name) : nullptr;
    p = reinterpret_cast<uintptr_t>(found ? found : libc_symbol(name));
    if (p == 0) p = kMissing;
    slot.store(p, std::memory_order_release);
  }
  return p == kMissing ? nullptr : reinterpret_cast<void*>(p);
}

// The same, typed: late_fn<decltype(&::dlopen)>(slot, "dlopen").
template <typename Fn>
inline Fn late_fn(LateSlot& slot, const char* name) noexcept {
  return reinterpret_cast<Fn>(late_symbol(slot, name));
}

}  // namespace bonsai
