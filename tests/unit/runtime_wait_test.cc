// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/runtime/wait: wait_until returns at or after its deadline
// (sleeping, spinning, cancellable or not), at once for a past deadline, early when the
// watched word changes (woken, or seen within a slice when nobody wakes it), and keeps
// errno. Upper bounds are loose (seconds): a loaded 2-core machine oversleeps, and only
// "not before the deadline" and "well before a far deadline" are what the limiter needs.
#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <thread>

#include "runtime/wait.h"
#include "sys/clock.h"
#include "sys/futex.h"

using namespace bonsai;

namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kLoose = 3'000 * kMs;  // an oversleep never seen even on a busy CI

// Waits `ahead` ns from now; @return ns past the deadline it returned (< 0: early).
int64_t overshoot(uint64_t ahead, uint64_t spin_ns, bool cancellable) {
  uint64_t deadline = mono_ns() + ahead;
  wait_until(deadline, spin_ns, cancellable);
  return static_cast<int64_t>(mono_ns() - deadline);
}

}  // namespace

TEST_CASE("wait_until: returns at or after the deadline, sleeping or spinning", "[wait]") {
  struct Row {
    const char* what;
    uint64_t ahead, spin_ns;
    bool cancellable;
  };
  const Row rows[] = {
      {"sleep", 20 * kMs, 0, false},
      {"sleep, cancellable", 20 * kMs, 0, true},
      {"spin", 2 * kMs, 50 * kMs, false},
      {"sleep then spin", 20 * kMs, 5 * kMs, false},
  };
  for (const Row& r : rows) {
    INFO(r.what);
    int64_t over = overshoot(r.ahead, r.spin_ns, r.cancellable);
    CHECK(over >= 0);
    CHECK(over < static_cast<int64_t>(kLoose));
  }
}

TEST_CASE("wait_until: a deadline already passed returns at once", "[wait]") {
  uint64_t t0 = mono_ns();
  wait_until(t0 - 1, 0, false);
  wait_until(0, 1'000 * kMs, true);
  CHECK(mono_ns() - t0 < kLoose);
}

TEST_CASE("wait_until: keeps errno", "[wait]") {
  for (bool cancellable : {false, true}) {
    errno = EDOM;
    wait_until(mono_ns() + 2 * kMs, 0, cancellable);
    CHECK(errno == EDOM);
  }
  std::atomic<uint64_t> word{5};
  errno = ERANGE;
  wait_until(mono_ns() + 2 * kMs, 0, false, &word, 5);  // the futex sleep times out
  CHECK(errno == ERANGE);
}

TEST_CASE("wait_until: a watched word that changes ends the wait early", "[wait]") {
  const uint64_t far = 20'000 * kMs;  // the deadline the wait must not reach
  SECTION("already changed: returns at once") {
    std::atomic<uint64_t> word{2};
    uint64_t t0 = mono_ns();
    wait_until(t0 + far, 0, false, &word, 1);
    CHECK(mono_ns() - t0 < kLoose);
  }
  for (bool wake : {true, false}) {
    // Woken like shm/seqlock.cc wakes; unwoken (an older bonsaictl), seen within a slice.
    DYNAMIC_SECTION((wake ? "changed and woken" : "changed, nobody wakes")) {
      std::atomic<uint64_t> word{7};
      uint64_t t0 = mono_ns();
      std::thread writer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        word.store(8, std::memory_order_release);
        if (wake) futex_wake_all(futex_low_word(&word));
      });
      wait_until(t0 + far, 0, false, &word, 7);
      uint64_t took = mono_ns() - t0;
      writer.join();
      CHECK(word.load() == 8);
      CHECK(took >= 30 * kMs);
      CHECK(took < kWatchSliceNs + kLoose);
    }
  }
}
