// SPDX-License-Identifier: MIT
// POSIX AIO: aio_read, aio_write, lio_listio (and their 64 names). glibc's helper
// threads move the bytes with internal calls no wrapper sees, so a request is held
// back and charged where the program hands it over and where it collects the result:
// - submission prepays what the request asks for, under `pread` (aio_read, LIO_READ)
//   or `pwrite` (aio_write, LIO_WRITE) looked up on its descriptor, waiting until the
//   bucket allows it, like a write that cannot be cut: a program with N requests in
//   flight has paid for all N, so a cap holds whatever its queue depth;
// - collection gives back what did not move: the first of aio_return, or aio_error
//   reporting a final status (0: aio_return's count; an error or ECANCELED: nothing
//   moved) refunds the difference and counts the call with the bytes that moved. A
//   short read at end of file costs what it read, a cancelled request nothing.
// Per-request state lives in a fixed lock-free table keyed by the aiocb's address (no
// allocation, async-signal-safe). A request that finds the table full stays charged
// what it asked for (counted at submission, no refund); an aiocb submitted again
// before its result was collected keeps its earlier charge. aio_error and aio_return
// go straight to glibc while no request is in the table.
#include <aio.h>
#include <atomic>
#include <cerrno>
#include <cstdint>

#include "interpose/real.h"
#include "interpose/strict_calls.h"
#include "interpose/wrap.h"
#include "log/blog.h"

using namespace bonsai;

namespace {

// One request in flight. `key`: 0 free, 1 being written or taken, else the aiocb.
struct Slot {
  std::atomic<uintptr_t> key;
  Ticket ticket;  // at submission: its view's generation and bucket, the bucket's parameters
  size_t bytes;   // prepaid
};

constexpr size_t kSlots = 4096;  // power of two
constexpr size_t kProbe = 32;    // slots a key may live in, from its hash
constexpr uintptr_t kBusy = 1;

constinit Slot g_slots[kSlots]{};
constinit std::atomic<int> g_inflight{0};  // slots holding a request

size_t home_of(uintptr_t key) noexcept {
  uint64_t h = static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h >> 40) & (kSlots - 1);
}

// Takes the entry of `cb` out of the table. @return false if it has none.
bool take(const void* cb, Slot& out) noexcept {
  auto key = reinterpret_cast<uintptr_t>(cb);
  size_t h = home_of(key);
  for (size_t i = 0; i < kProbe; ++i) {
    Slot& s = g_slots[(h + i) & (kSlots - 1)];
    uintptr_t k = key;
    if (s.key.load(std::memory_order_relaxed) != key) continue;
    if (!s.key.compare_exchange_strong(k, kBusy, std::memory_order_acquire, std::memory_order_relaxed)) continue;
    out.ticket = s.ticket;
    out.bytes = s.bytes;
    s.key.store(0, std::memory_order_release);
    g_inflight.fetch_sub(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

// Records a prepaid request. @return false when its slots are all taken.
bool put(const void* cb, const Ticket& t, size_t bytes) noexcept {
  auto key = reinterpret_cast<uintptr_t>(cb);
  size_t h = home_of(key);
  for (size_t i = 0; i < kProbe; ++i) {
    Slot& s = g_slots[(h + i) & (kSlots - 1)];
    uintptr_t k = 0;
    if (s.key.load(std::memory_order_relaxed) != 0) continue;
    if (!s.key.compare_exchange_strong(k, kBusy, std::memory_order_acquire, std::memory_order_relaxed)) continue;
    s.ticket = t;
    s.bytes = bytes;
    g_inflight.fetch_add(1, std::memory_order_relaxed);
    s.key.store(key, std::memory_order_release);
    return true;
  }
  return false;
}

// Gives back what a collected request did not move (`moved` < 0: failed or
// cancelled, nothing moved) and counts it. Limits changed since the submission: the
// old bucket is gone, nothing is given back. errno untouched.
void settle(const Slot& e, ssize_t moved) noexcept {
  Ticket t = e.ticket;
  const LimitsView* now = g_limiter.view.load(std::memory_order_acquire);
  if (now != t.view || !now || view_gen(now) != t.gen) t.bucket = kNoBucket;
  else if (t.bucket != kNoBucket && t_thread.credit_gen != t.gen) thread_credit_reset(now, t.gen);
  wrap::ticket_refund(t, e.bytes, moved);
  ticket_count(t, moved);
}

// The collection of `cb`'s result: settles its entry, if it has one.
void collected(const void* cb, ssize_t moved) noexcept {
  Slot e;
  if (take(cb, e)) settle(e, moved);
}

// Prepays one request of `n` bytes on `fd` and records it under `cb`. @return
// whether it was recorded (then the caller settles it if the submission fails).
bool prepay(const void* cb, CallId id, int fd, size_t n) noexcept {
  Slot old;
  if (take(cb, old)) settle(old, static_cast<ssize_t>(old.bytes));  // reused before collection: it stays paid
  Ticket t = ticket_for(id, fd);
  if (t.bucket == kNoBucket && !g_limiter.counters) return false;  // nothing to charge or count
  wrap::ticket_prepay(t, n, false);
  if (put(cb, t, n)) return true;
  BONSAI_LOG_ONCE(LogLevel::Warn, "more than %zu AIO requests in flight: the rest are charged what they ask for", kSlots);
  ticket_count(t, static_cast<ssize_t>(n));
  return false;
}

// A final status (aio_error not EINPROGRESS) settles the request: 0 with aio_return's
// count (glibc's aio_return only reads the result: it may be read again), an error or
// ECANCELED with nothing moved.
void final_status(aiocb* cb, int status) noexcept {
  if (status == EINPROGRESS) return;
  Slot e;
  if (!take(cb, e)) return;
  settle(e, status == 0 ? real::aio_return(cb) : -1);
}

template <typename Cb, typename Submit>
[[gnu::noinline]] int submit_one(CallId id, Cb* cb, Submit&& submit) {
  if (!cb || !limiter_active() || strict::on()) [[unlikely]] return submit();
  int err = errno;
  bool recorded = prepay(cb, id, cb->aio_fildes, cb->aio_nbytes);
  errno = err;
  int r = submit();
  if (r != 0 && recorded) {  // not queued: nothing will move
    err = errno;
    collected(cb, -1);
    errno = err;
  }
  return r;
}

template <typename Cb, typename Submit>
[[gnu::noinline]] int submit_list(int mode, Cb* const* list, int nent, Submit&& submit) {
  if (!list || nent <= 0 || !limiter_active() || strict::on()) [[unlikely]] return submit();
  int err = errno;
  for (int i = 0; i < nent; ++i) {
    Cb* cb = list[i];
    if (!cb) continue;
    if (cb->aio_lio_opcode == LIO_READ) prepay(cb, CallId::pread, cb->aio_fildes, cb->aio_nbytes);
    else if (cb->aio_lio_opcode == LIO_WRITE) prepay(cb, CallId::pwrite, cb->aio_fildes, cb->aio_nbytes);
  }
  errno = err;
  int r = submit();
  if (mode == LIO_WAIT && (r == 0 || errno == EIO)) {  // every entry has its final status now
    err = errno;
    for (int i = 0; i < nent; ++i) {
      if (list[i]) final_status(reinterpret_cast<aiocb*>(list[i]), real::aio_error(reinterpret_cast<aiocb*>(list[i])));
    }
    errno = err;
  }
  return r;
}

[[gnu::noinline]] int error_slow(const aiocb* cb, int r) {
  if (r == EINPROGRESS || !cb) return r;
  int err = errno;
  final_status(const_cast<aiocb*>(cb), r);
  errno = err;
  return r;
}

[[gnu::noinline]] ssize_t return_slow(aiocb* cb, ssize_t r) {
  int err = errno;
  collected(cb, r);
  errno = err;
  return r;
}

}  // namespace

// lio_listio's list as <aio.h> declares it (musl's inner pointers are restrict-qualified).
#if defined(__GLIBC__)
using AiocbList = aiocb* const*;
#else
using AiocbList = aiocb* __restrict const*;
#endif

extern "C" {
#pragma GCC visibility push(default)

int aio_read(aiocb* cb) {
  BONSAI_FAST(pread, aio_read, (cb));
  return submit_one(CallId::pread, cb, [&] { return real::aio_read(cb); });
}
int aio_read64(aiocb64* cb) {
  BONSAI_FAST(pread, aio_read64, (cb));
  return submit_one(CallId::pread, cb, [&] { return real::aio_read64(cb); });
}
int aio_write(aiocb* cb) {
  BONSAI_FAST(pwrite, aio_write, (cb));
  return submit_one(CallId::pwrite, cb, [&] { return real::aio_write(cb); });
}
int aio_write64(aiocb64* cb) {
  BONSAI_FAST(pwrite, aio_write64, (cb));
  return submit_one(CallId::pwrite, cb, [&] { return real::aio_write64(cb); });
}

int lio_listio(int mode, AiocbList list_in, int nent, sigevent* sig) {
  aiocb* const* list = const_cast<aiocb* const*>(list_in);
  if (wrap::unlimited(CallId::pread, CallId::pwrite)) [[likely]] return real::lio_listio(mode, list, nent, sig);
  return submit_list(mode, list, nent, [&] { return real::lio_listio(mode, list, nent, sig); });
}
int lio_listio64(int mode, aiocb64* const list[], int nent, sigevent* sig) {
  if (wrap::unlimited(CallId::pread, CallId::pwrite)) [[likely]] return real::lio_listio64(mode, list, nent, sig);
  return submit_list(mode, list, nent, [&] { return real::lio_listio64(mode, list, nent, sig); });
}

int aio_error(const aiocb* cb) {
  if (g_inflight.load(std::memory_order_relaxed) == 0) [[likely]] return real::aio_error(cb);
  return error_slow(cb, real::aio_error(cb));
}
int aio_error64(const aiocb64* cb) {
  if (g_inflight.load(std::memory_order_relaxed) == 0) [[likely]] return real::aio_error64(cb);
  return error_slow(reinterpret_cast<const aiocb*>(cb), real::aio_error64(cb));
}

ssize_t aio_return(aiocb* cb) {
  if (g_inflight.load(std::memory_order_relaxed) == 0) [[likely]] return real::aio_return(cb);
  return return_slow(cb, real::aio_return(cb));
}
ssize_t aio_return64(aiocb64* cb) {
  if (g_inflight.load(std::memory_order_relaxed) == 0) [[likely]] return real::aio_return64(cb);
  return return_slow(reinterpret_cast<aiocb*>(cb), real::aio_return64(cb));
}

#pragma GCC visibility pop
}  // extern "C"

static_assert(sizeof(aiocb) == sizeof(aiocb64), "aiocb64 is aiocb on this ABI (LP64)");
