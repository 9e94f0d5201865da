// SPDX-License-Identifier: MIT
// The SIGBUS guard of mapped segments (see shm_guard.h). The handler does only
// async-signal-safe things: a table walk, mmap, sigaction, raise.
#include "shm/shm_guard.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <sys/mman.h>

#if defined(__GLIBC__)
// glibc's own name for sigaction: never our interposed sigaction() (which forwards
// SIGBUS requests to shm_guard_set_chained), nor a sanitizer's interceptor.
extern "C" int __sigaction(int, const struct sigaction*, struct sigaction*);
#else
#include "sys/late_bound.h"
#endif

namespace bonsai {
namespace {

#if defined(__GLIBC__)
int libc_sigaction(int sig, const struct sigaction* sa, struct sigaction* old) { return __sigaction(sig, sa, old); }
#else
// musl keeps its __sigaction hidden: its sigaction, the one after ours (looked up when
// the guard is installed, before any handler can need it).
constinit LateSlot g_sigaction{0};
int libc_sigaction(int sig, const struct sigaction* sa, struct sigaction* old) {
  auto fn = late_fn<int (*)(int, const struct sigaction*, struct sigaction*)>(g_sigaction, "sigaction");
  if (!fn) {
    errno = ENOSYS;
    return -1;
  }
  return fn(sig, sa, old);
}
#endif

struct Region {
  std::atomic<uintptr_t> addr;  // 0: free entry
  std::atomic<size_t> len;
  std::atomic<bool> lost;
};

constinit Region g_regions[kGuardRegions]{};
constinit std::atomic<int> g_state{0};  // 0: not installed, 1: installing, 2: installed, 3: failed
// What the application had (or later asked for, through our sigaction wrapper).
// Written rarely, read by the handler: a torn read is only possible while the
// application changes its SIGBUS handler at the very moment a SIGBUS arrives.
constinit struct sigaction g_prev{};

bool replace(Region& r) {
  uintptr_t a = r.addr.load(std::memory_order_acquire);
  size_t n = r.len.load(std::memory_order_relaxed);
  if (!a || !n) return false;
  void* p = mmap(reinterpret_cast<void*>(a), n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                 -1, 0);
  if (p == MAP_FAILED) return false;
  r.lost.store(true, std::memory_order_release);
  return true;
}

bool handle(uintptr_t fault) {
  for (auto& r : g_regions) {
    uintptr_t a = r.addr.load(std::memory_order_acquire);
    if (!a) continue;
    if (fault >= a && fault - a < r.len.load(std::memory_order_relaxed)) return replace(r);
  }
  return false;
}

void default_action(const siginfo_t* si) {
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  libc_sigaction(SIGBUS, &dfl, nullptr);
  // A fault re-executes the instruction and dies of it; a sent SIGBUS (kill, raise)
  // is sent again: pending while this handler runs, fatal once it returns.
  if (!si || si->si_code <= 0) raise(SIGBUS);
}

void on_sigbus(int sig, siginfo_t* si, void* ctx) {
  int saved = errno;
  if (si && si->si_code > 0 && handle(reinterpret_cast<uintptr_t>(si->si_addr))) {
    errno = saved;
    return;
  }
  struct sigaction prev = g_prev;
  if (prev.sa_flags & SA_RESETHAND) {
    g_prev = {};
    g_prev.sa_handler = SIG_DFL;
  }
  errno = saved;
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) return prev.sa_sigaction(sig, si, ctx);
  } else if (prev.sa_handler == SIG_IGN) {
    if (!si || si->si_code <= 0) return;  // an ignored kill -BUS stays ignored
  } else if (prev.sa_handler != SIG_DFL) {
    return prev.sa_handler(sig);
  }
  default_action(si);
  errno = saved;
}

bool install() {
  int s = g_state.load(std::memory_order_acquire);
  if (s == 2) return true;
  if (s == 3) return false;
  int expected = 0;
  if (!g_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    for (int i = 0; i < 1'000'000 && g_state.load(std::memory_order_acquire) == 1; ++i) {
    }
    return g_state.load(std::memory_order_acquire) == 2;
  }
  struct sigaction sa{};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  // sa_mask: empty as initialised (sigemptyset is a page of libc a start touches nowhere else)
  int saved = errno;
  bool ok = libc_sigaction(SIGBUS, &sa, &g_prev) == 0;
  errno = saved;
  g_state.store(ok ? 2 : 3, std::memory_order_release);
  return ok;
}

}  // namespace

bool shm_guard_register(void* addr, size_t len) noexcept {
  if (!addr || !len || !install()) return false;
  for (auto& r : g_regions) {
    uintptr_t expected = 0;
    if (r.addr.load(std::memory_order_relaxed) != 0) continue;
    r.len.store(len, std::memory_order_relaxed);
    r.lost.store(false, std::memory_order_relaxed);
    if (r.addr.compare_exchange_strong(expected, reinterpret_cast<uintptr_t>(addr), std::memory_order_acq_rel))
      return true;
  }
  return false;
}

void shm_guard_unregister(void* addr) noexcept {
  for (auto& r : g_regions)
    if (r.addr.load(std::memory_order_acquire) == reinterpret_cast<uintptr_t>(addr))
      r.addr.store(0, std::memory_order_release);
}

bool shm_guard_lost(const void* addr) noexcept {
  for (auto& r : g_regions)
    if (r.addr.load(std::memory_order_acquire) == reinterpret_cast<uintptr_t>(addr))
      return r.lost.load(std::memory_order_acquire);
  return false;
}

bool shm_guard_chained(struct sigaction* prev_out) noexcept {
  if (g_state.load(std::memory_order_acquire) != 2) return false;
  if (prev_out) *prev_out = g_prev;
  return true;
}

bool shm_guard_set_chained(const struct sigaction& next) noexcept {
  if (g_state.load(std::memory_order_acquire) != 2) return false;
  g_prev = next;
  return true;
}

bool shm_guard_handle_for_test(void* fault_addr) noexcept { return handle(reinterpret_cast<uintptr_t>(fault_addr)); }

}  // namespace bonsai
