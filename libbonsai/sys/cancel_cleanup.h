// SPDX-License-Identifier: MIT
// pthread_cleanup_push/pop for the library's cancellable waits, without linking glibc's
// cancellation hooks. glibc's macros (C, no exceptions) call
// __pthread_register_cancel, __pthread_unregister_cancel and __pthread_unwind_next:
// GLIBC_2.34 in libc, in libpthread before, which a single-threaded program does not
// load. These are the same macros with the three looked up on first use
// (sys/late_bound.h). Where they are absent the process has no threads library, so no
// thread of it can be cancelled, and nothing is registered. musl's macros are plain
// calls into musl: used as they are.
//
//   BONSAI_CLEANUP_PUSH(routine, arg);  ...  BONSAI_CLEANUP_POP();   (never runs `routine`
//   at the pop, as pthread_cleanup_pop(0); a pair at the same brace level, like glibc's)
#pragma once
#include <pthread.h>

#if defined(__GLIBC__)
namespace bonsai {

struct CancelHooks {
  void (*reg)(__pthread_unwind_buf_t*);
  void (*unreg)(__pthread_unwind_buf_t*);
  void (*next)(__pthread_unwind_buf_t*);  // does not return
};

// @return the three hooks, or three nullptr when this process lacks any (no threads library).
CancelHooks cancel_hooks() noexcept;

}  // namespace bonsai

#define BONSAI_CLEANUP_PUSH(routine, arg)                                                   \
  do {                                                                                      \
    const ::bonsai::CancelHooks bonsai_hooks_ = ::bonsai::cancel_hooks();                   \
    __pthread_unwind_buf_t bonsai_cancel_buf_;                                              \
    void (*bonsai_cancel_routine_)(void*) = (routine);                                      \
    void* bonsai_cancel_arg_ = (arg);                                                       \
    if (bonsai_hooks_.reg) {                                                                \
      if (__builtin_expect(__sigsetjmp_cancel(bonsai_cancel_buf_.__cancel_jmp_buf, 0), 0)) { \
        bonsai_cancel_routine_(bonsai_cancel_arg_);                                         \
        bonsai_hooks_.next(&bonsai_cancel_buf_);                                            \
        __builtin_unreachable();                                                            \
      }                                                                                     \
      bonsai_hooks_.reg(&bonsai_cancel_buf_);                                               \
    }                                                                                       \
    do {
#define BONSAI_CLEANUP_POP()                                       \
    } while (0);                                                   \
    if (bonsai_hooks_.reg) bonsai_hooks_.unreg(&bonsai_cancel_buf_); \
  } while (0)
#else
#define BONSAI_CLEANUP_PUSH(routine, arg) pthread_cleanup_push(routine, arg)
#define BONSAI_CLEANUP_POP() pthread_cleanup_pop(0)
#endif
