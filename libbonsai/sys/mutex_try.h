// SPDX-License-Identifier: MIT
// pthread_mutex_trylock, looked up rather than linked: glibc has it in libc
// only since 2.34 (GLIBC_2.34), in libpthread before. Where this process has none, it
// has no threads library either: glibc's pthread_mutex_lock/unlock in libc then do
// nothing and no second thread exists, so the try succeeds, as theirs would. musl and the
// sanitizer builds: the function itself.
#pragma once
#include <pthread.h>

#include "sys/late_bound.h"

namespace bonsai {

#if defined(__GLIBC__) && !BONSAI_SANITIZED
inline constinit LateSlot g_mutex_trylock{0};
#endif

// pthread_mutex_trylock(m): 0 when taken, EBUSY when another holds it.
inline int mutex_trylock(pthread_mutex_t* m) noexcept {
#if defined(__GLIBC__) && !BONSAI_SANITIZED
  auto fn = late_fn<int (*)(pthread_mutex_t*)>(g_mutex_trylock, "pthread_mutex_trylock");
  return fn ? fn(m) : 0;
#else
  return pthread_mutex_trylock(m);
#endif
}

}  // namespace bonsai
