// SPDX-License-Identifier: MIT
// stdio: glibc's stdio reaches the kernel through internal calls we cannot see, so
// bytes are charged as the application hands them over: fread/fwrite (+_unlocked,
// _chk), and the line calls fgets/fputs/getline/getdelim counted as fread/fwrite.
// printf-family and single-character calls are not metered (see docs/reference/limits.md).
// A FILE on a socket made while compression is on charges its own bytes
// (compress_stdio.cc): handed over as is.
// A call larger than a chunk is made in pieces of a chunk, each after its wait, so a
// huge fwrite takes its time (getline/getdelim, whose size is known only afterwards,
// wait it off after the call). Pieces of a locking call hold the FILE's lock
// throughout, so the call stays atomic for other threads.
#include <cstdio>
#include <cstring>
#include <pthread.h>

#include "interpose/compressed/compress_hooks.h"
#include "interpose/real.h"
#include "interpose/strict_calls.h"
#include "interpose/wrap.h"

using namespace bonsai;

namespace {

inline int fd_of(FILE* f) { return f ? fileno_unlocked(f) : -1; }
using wrap::at;

// The FILE's lock for the pieces of one locking call, with cancellation off while
// it is held: a piece cancelled inside glibc would leave our level of it taken.
class FileHold {
 public:
  FileHold(FILE* f, bool lock) : f_(lock ? f : nullptr) {
    if (!f_) return;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_);
    flockfile(f_);
  }
  ~FileHold() {
    if (!f_) return;
    funlockfile(f_);
    pthread_setcancelstate(cancel_, nullptr);
  }
  FileHold(const FileHold&) = delete;
  FileHold& operator=(const FileHold&) = delete;

 private:
  FILE* f_;
  int cancel_ = PTHREAD_CANCEL_ENABLE;
};

// Bytes [0, total) in pieces of at most `chunk`, each after its wait, never
// cancelled; stops at a short piece (EOF, error): wrap::transfer_split, the one chunk
// loop. `piece(off, len)` returns the bytes it moved (never fails: stdio reports
// errors as short counts).
template <typename Piece>
size_t split_bytes(Ticket& t, size_t chunk, size_t total, Piece&& piece) {
  bool is_write = call_dir(t.call) == CallDir::Write;  // a write is paid before it moves
  auto moved = [&](size_t off, size_t len) { return static_cast<ssize_t>(piece(off, len)); };
  return static_cast<size_t>(wrap::transfer_split(t, total, chunk, false, is_write, moved));
}

// Strict mode: glibc's internal read()/write() under a stdio call are
// unmarked, so the supervisor charges them under `read`/`write` when those are limited.
// A stdio call whose bucket is that very one (`writes=...`: one bucket for fwrite and
// write) is left to the supervisor, paid once; one with a bucket of its own
// (`fwrite=...`) is the library's to hold, as without --strict.
[[gnu::noinline]] bool strict_leaves(const Ticket& t, FILE* f) {
  if (t.bucket == kNoBucket) return true;
  CallId sys = call_dir(t.call) == CallDir::Write ? CallId::write : CallId::read;
  return ticket_in_view(t, sys, fd_of(f)).bucket == t.bucket;
}

// fread/fwrite of `count` items of `size` bytes. `whole()` is the caller's call;
// `piece(off, len)` moves `len` bytes from byte `off` as single-byte items without
// locking. The result of pieces is what glibc returns: all items, or the bytes
// moved / size.
template <typename Whole, typename Piece>
size_t items(CallId id, FILE* f, size_t size, size_t count, bool lock, Whole&& whole, Piece&& piece) {
  if (!limiter_active() || compress::stdio_own_file(f)) [[unlikely]] return whole();
  Ticket t = ticket_for(id, fd_of(f));
  if (strict::on() && strict_leaves(t, f)) [[unlikely]] return whole();
  size_t chunk = ticket_chunk(t), total;
  if (__builtin_mul_overflow(size, count, &total) || total <= chunk) [[likely]] {
    ticket_wait(t, false, call_dir(id) == CallDir::Write && total <= chunk ? total : 0);
    size_t r = whole();
    ticket_done(t, static_cast<ssize_t>(r * size));
    return r;
  }
  FileHold hold(f, lock);
  size_t done = split_bytes(t, chunk, total, piece);
  return done == total ? count : done / size;
}

// fgets and its forms: a line read into `s` (room for n - 1 bytes and the NUL).
// `whole()` is the caller's call. A buffer larger than a chunk is filled by
// fgets_unlocked pieces of a chunk until the line ends.
template <typename Whole>
char* line_in(FILE* f, char* s, int n, bool lock, Whole&& whole) {
  if (!limiter_active() || compress::stdio_own_file(f)) [[unlikely]] return whole();
  Ticket t = ticket_for(CallId::fread, fd_of(f));
  if (strict::on() && strict_leaves(t, f)) [[unlikely]] return whole();
  size_t chunk = ticket_chunk(t);
  if (n <= 1 || static_cast<size_t>(n - 1) <= chunk) [[likely]] {
    ticket_wait(t, false);
    char* r = whole();
    ticket_done(t, r ? static_cast<ssize_t>(std::strlen(r)) : -1);
    return r;
  }
  FileHold hold(f, lock);
  size_t want = static_cast<size_t>(n - 1), done = 0;
  char* result = nullptr;
  while (done < want) {
    size_t len = want - done < chunk ? want - done : chunk;
    ticket_wait(t, false);
    if (!real::fgets_unlocked(s + done, static_cast<int>(len + 1), f)) break;  // EOF or error
    size_t got = std::strlen(s + done);
    ticket_charge(t, static_cast<ssize_t>(got));
    done += got;
    result = s;
    if (got < len || (got && s[done - 1] == '\n')) break;  // the line (or the file) ended
  }
  ticket_count(t, result ? static_cast<ssize_t>(done) : -1);
  return result;
}

// fputs and fputs_unlocked: a string longer than a chunk is written by
// fwrite_unlocked pieces (glibc's fputs is exactly that write; it returns 1).
template <typename Whole>
int line_out(FILE* f, const char* s, bool lock, Whole&& whole) {
  if (!limiter_active() || compress::stdio_own_file(f)) [[unlikely]] return whole();
  Ticket t = ticket_for(CallId::fwrite, fd_of(f));
  if (strict::on() && strict_leaves(t, f)) [[unlikely]] return whole();
  size_t chunk = ticket_chunk(t);
  size_t len = std::strlen(s);
  if (len <= chunk) [[likely]] {
    ticket_wait(t, false, len);
    int r = whole();
    ticket_done(t, r == EOF ? -1 : static_cast<ssize_t>(len));
    return r;
  }
  FileHold hold(f, lock);
  size_t done = split_bytes(t, chunk, len, [&](size_t off, size_t n) { return real::fwrite_unlocked(s + off, 1, n, f); });
  return done == len ? 1 : EOF;
}

// getline/getdelim: the length is known only after the call, which allocates: a
// line longer than a chunk is waited off after the call.
template <typename Whole>
ssize_t line_alloc(FILE* f, Whole&& whole) {
  if (!limiter_active() || compress::stdio_own_file(f)) [[unlikely]] return whole();
  Ticket t = ticket_for(CallId::fread, fd_of(f));
  if (strict::on() && strict_leaves(t, f)) [[unlikely]] return whole();
  ticket_wait(t, false);
  ssize_t r = whole();
  ticket_charge(t, r);
  if (r > 0 && static_cast<size_t>(r) > ticket_chunk(t)) ticket_wait(t, false);
  ticket_count(t, r);
  return r;
}

// The fortify checks (size * n must fit pl) are glibc's: a call that fails them is
// handed over whole.
inline bool fits(size_t pl, size_t s, size_t n) {
  size_t total;
  return !__builtin_mul_overflow(s, n, &total) && total <= pl;
}

}  // namespace

extern "C" {
#pragma GCC visibility push(default)

// ---- fread / fwrite ----

[[gnu::noinline]] static size_t fread_slow(void* p, size_t s, size_t n, FILE* f) {
  return items(CallId::fread, f, s, n, true, [&] { return real::fread(p, s, n, f); },
               [&](size_t off, size_t len) { return real::fread_unlocked(at(p, off), 1, len, f); });
}
size_t fread(void* p, size_t s, size_t n, FILE* f) {
  BONSAI_FAST(fread, fread, (p, s, n, f));
  return fread_slow(p, s, n, f);
}
[[gnu::noinline]] static size_t fread_unlocked_slow(void* p, size_t s, size_t n, FILE* f) {
  return items(CallId::fread, f, s, n, false, [&] { return real::fread_unlocked(p, s, n, f); },
               [&](size_t off, size_t len) { return real::fread_unlocked(at(p, off), 1, len, f); });
}
size_t fread_unlocked(void* p, size_t s, size_t n, FILE* f) {
  BONSAI_FAST(fread, fread_unlocked, (p, s, n, f));
  return fread_unlocked_slow(p, s, n, f);
}
[[gnu::noinline]] static size_t __fread_chk_slow(void* p, size_t pl, size_t s, size_t n, FILE* f) {
  if (!fits(pl, s, n)) return real::__fread_chk(p, pl, s, n, f);
  return items(CallId::fread, f, s, n, true, [&] { return real::__fread_chk(p, pl, s, n, f); },
               [&](size_t off, size_t len) { return real::fread_unlocked(at(p, off), 1, len, f); });
}
size_t __fread_chk(void* p, size_t pl, size_t s, size_t n, FILE* f) {
  BONSAI_FAST(fread, __fread_chk, (p, pl, s, n, f));
  return __fread_chk_slow(p, pl, s, n, f);
}
[[gnu::noinline]] static size_t __fread_unlocked_chk_slow(void* p, size_t pl, size_t s, size_t n, FILE* f) {
  if (!fits(pl, s, n)) return real::__fread_unlocked_chk(p, pl, s, n, f);
  return items(CallId::fread, f, s, n, false, [&] { return real::__fread_unlocked_chk(p, pl, s, n, f); },
               [&](size_t off, size_t len) { return real::fread_unlocked(at(p, off), 1, len, f); });
}
size_t __fread_unlocked_chk(void* p, size_t pl, size_t s, size_t n, FILE* f) {
  BONSAI_FAST(fread, __fread_unlocked_chk, (p, pl, s, n, f));
  return __fread_unlocked_chk_slow(p, pl, s, n, f);
}
[[gnu::noinline]] static size_t fwrite_slow(const void* p, size_t s, size_t n, FILE* f) {
  return items(CallId::fwrite, f, s, n, true, [&] { return real::fwrite(p, s, n, f); },
               [&](size_t off, size_t len) { return real::fwrite_unlocked(at(p, off), 1, len, f); });
}
size_t fwrite(const void* p, size_t s, size_t n, FILE* f) {
  BONSAI_FAST(fwrite, fwrite, (p, s, n, f));
  return fwrite_slow(p, s, n, f);
}
[[gnu::noinline]] static size_t fwrite_unlocked_slow(const void* p, size_t s, size_t n, FILE* f) {
  return items(CallId::fwrite, f, s, n, false, [&] { return real::fwrite_unlocked(p, s, n, f); },
               [&](size_t off, size_t len) { return real::fwrite_unlocked(at(p, off), 1, len, f); });
}
size_t fwrite_unlocked(const void* p, size_t s, size_t n, FILE* f) {
  BONSAI_FAST(fwrite, fwrite_unlocked, (p, s, n, f));
  return fwrite_unlocked_slow(p, s, n, f);
}

// ---- lines ----

[[gnu::noinline]] static char* fgets_slow(char* s, int n, FILE* f) {
  return line_in(f, s, n, true, [&] { return real::fgets(s, n, f); });
}
char* fgets(char* s, int n, FILE* f) {
  BONSAI_FAST(fread, fgets, (s, n, f));
  return fgets_slow(s, n, f);
}
[[gnu::noinline]] static char* fgets_unlocked_slow(char* s, int n, FILE* f) {
  return line_in(f, s, n, false, [&] { return real::fgets_unlocked(s, n, f); });
}
char* fgets_unlocked(char* s, int n, FILE* f) {
  BONSAI_FAST(fread, fgets_unlocked, (s, n, f));
  return fgets_unlocked_slow(s, n, f);
}
// __fgets_chk: glibc aborts when n > sz; such a call is handed over whole.
[[gnu::noinline]] static char* __fgets_chk_slow(char* s, size_t sz, int n, FILE* f) {
  if (n > 0 && static_cast<size_t>(n) > sz) return real::__fgets_chk(s, sz, n, f);
  return line_in(f, s, n, true, [&] { return real::__fgets_chk(s, sz, n, f); });
}
char* __fgets_chk(char* s, size_t sz, int n, FILE* f) {
  BONSAI_FAST(fread, __fgets_chk, (s, sz, n, f));
  return __fgets_chk_slow(s, sz, n, f);
}
[[gnu::noinline]] static char* __fgets_unlocked_chk_slow(char* s, size_t sz, int n, FILE* f) {
  if (n > 0 && static_cast<size_t>(n) > sz) return real::__fgets_unlocked_chk(s, sz, n, f);
  return line_in(f, s, n, false, [&] { return real::__fgets_unlocked_chk(s, sz, n, f); });
}
char* __fgets_unlocked_chk(char* s, size_t sz, int n, FILE* f) {
  BONSAI_FAST(fread, __fgets_unlocked_chk, (s, sz, n, f));
  return __fgets_unlocked_chk_slow(s, sz, n, f);
}

[[gnu::noinline]] static int fputs_slow(const char* s, FILE* f) {
  return line_out(f, s, true, [&] { return real::fputs(s, f); });
}
int fputs(const char* s, FILE* f) {
  BONSAI_FAST(fwrite, fputs, (s, f));
  return fputs_slow(s, f);
}
[[gnu::noinline]] static int fputs_unlocked_slow(const char* s, FILE* f) {
  return line_out(f, s, false, [&] { return real::fputs_unlocked(s, f); });
}
int fputs_unlocked(const char* s, FILE* f) {
  BONSAI_FAST(fwrite, fputs_unlocked, (s, f));
  return fputs_unlocked_slow(s, f);
}

[[gnu::noinline]] static ssize_t getdelim_slow(char** l, size_t* n, int d, FILE* f) {
  return line_alloc(f, [&] { return real::getdelim(l, n, d, f); });
}
ssize_t getdelim(char** l, size_t* n, int d, FILE* f) {
  BONSAI_FAST(fread, getdelim, (l, n, d, f));
  return getdelim_slow(l, n, d, f);
}
[[gnu::noinline]] static ssize_t __getdelim_slow(char** l, size_t* n, int d, FILE* f) {
  return line_alloc(f, [&] { return real::__getdelim(l, n, d, f); });
}
ssize_t __getdelim(char** l, size_t* n, int d, FILE* f) {
  BONSAI_FAST(fread, __getdelim, (l, n, d, f));
  return __getdelim_slow(l, n, d, f);
}
[[gnu::noinline]] static ssize_t getline_slow(char** l, size_t* n, FILE* f) {
  return line_alloc(f, [&] { return real::getline(l, n, f); });
}
ssize_t getline(char** l, size_t* n, FILE* f) {
  BONSAI_FAST(fread, getline, (l, n, f));
  return getline_slow(l, n, f);
}

#pragma GCC visibility pop
}  // extern "C"
