// SPDX-License-Identifier: MIT
// ThreadSanitizer runs the real function of a blocking call it intercepts (poll, select,
// epoll_wait: our wrappers) with its interceptors and synchronisation ignored, so a lock
// taken inside our readiness wrappers is invisible to it and it reports false races. A
// lock used there is annotated: BONSAI_TSAN_ACQUIRE after taking it, BONSAI_TSAN_RELEASE
// before letting it go. Nothing in other builds.
#pragma once

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#define BONSAI_TSAN_ACQUIRE(p) __tsan_acquire(p)
#define BONSAI_TSAN_RELEASE(p) __tsan_release(p)
#else
#define BONSAI_TSAN_ACQUIRE(p) static_cast<void>(p)
#define BONSAI_TSAN_RELEASE(p) static_cast<void>(p)
#endif
