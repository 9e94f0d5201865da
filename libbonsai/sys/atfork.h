// SPDX-License-Identifier: MIT
// pthread_atfork(nullptr, nullptr, child), without the call. pthread_atfork is a stub
// from libc_nonshared.a that the linker puts at the far end of the library's code, a
// page no other start-up code shares: one more page fault at every exec (see
// sys/startup.h). It only forwards to glibc's exported __register_atfork with this
// object's __dso_handle (so the handler goes when a dlclose unloads us), as this does.
// musl exports pthread_atfork itself (no __register_atfork; a handler stays registered
// for the life of the process).
#pragma once

#if defined(__GLIBC__)
extern "C" {
extern void* __dso_handle;  // from crtbegin.o: this shared object
int __register_atfork(void (*prepare)(), void (*parent)(), void (*child)(), void* dso_handle);
}
#else
#include <pthread.h>
#endif

namespace bonsai {

// Runs `child` in the child after every fork(). @return 0, or an errno value.
inline int at_fork_child(void (*child)()) noexcept {
#if defined(__GLIBC__)
  return __register_atfork(nullptr, nullptr, child, __dso_handle);
#else
  return pthread_atfork(nullptr, nullptr, child);
#endif
}

}  // namespace bonsai
