// SPDX-License-Identifier: MIT
// Sleeping and spinning to a deadline (see wait.h).
#include "runtime/wait.h"

#include <cerrno>
#include <ctime>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/futex.h"

namespace bonsai {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// A raw clock_nanosleep: unlike glibc's wrapper it is not a cancellation point.
long raw_sleep_until(const timespec* ts) {
  long ret;
#if defined(__x86_64__)
  register long r10 asm("r10") = 0;
  asm volatile("syscall"
               : "=a"(ret)
               : "0"(static_cast<long>(SYS_clock_nanosleep)), "D"(static_cast<long>(CLOCK_MONOTONIC)),
                 "S"(static_cast<long>(TIMER_ABSTIME)), "d"(ts), "r"(r10)
               : "rcx", "r11", "memory");
  return ret;
#else
  ret = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, ts, nullptr);
  return -ret;
#endif
}

}  // namespace

void wait_until(uint64_t deadline_ns, uint64_t spin_ns, bool cancellable, const std::atomic<uint64_t>* watch,
                uint64_t seen) noexcept {
  int saved_errno = errno;
  for (;;) {
    if (watch && watch->load(std::memory_order_acquire) != seen) break;
    uint64_t now = mono_ns();
    if (now >= deadline_ns) break;
    if (deadline_ns - now <= spin_ns) {
      while (mono_ns() < deadline_ns) cpu_relax();
      break;
    }
    uint64_t until = deadline_ns;
    if (watch && until - now > kWatchSliceNs) until = now + kWatchSliceNs;
    timespec ts{static_cast<time_t>(until / 1'000'000'000u), static_cast<long>(until % 1'000'000'000u)};
    if (watch) {
      // One sleep on the limits' seq: a change wakes it at once (shm/seqlock.cc), so a
      // thousand queued threads cost a wake-up each per wait, not one per slice.
      // Cancellable: asynchronous cancellation for the syscall alone, as glibc's own
      // cancellation points were made.
      int type = PTHREAD_CANCEL_DEFERRED;
      if (cancellable) pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &type);
      futex_wait_until(futex_low_word(watch), static_cast<uint32_t>(seen), &ts);
      if (cancellable) pthread_setcanceltype(type, nullptr);
    } else if (cancellable) {
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);  // EINTR: loop
    } else {
      raw_sleep_until(&ts);
    }
  }
  errno = saved_errno;
}

}  // namespace bonsai
