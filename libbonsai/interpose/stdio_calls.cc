// SPDX-License-Identifier: MIT
// stdio: glibc's stdio reaches the kernel through internal calls we cannot see, so
// bytes are charged as the application hands them over: fread/fwrite (+_unlocked,
// _chk), and the line calls fgets/fputs/getline/getdelim counted as fread/fwrite.
// printf-family and single-character calls are not metered (see docs/limits.md).
#include <cstdio>
#include <cstring>

#include "interpose/real.h"
#include "interpose/wrap.h"

using namespace bonsai;

namespace {

inline int fd_of(FILE* f) { return f ? fileno_unlocked(f) : -1; }

template <typename Call>
size_t items(CallId id, FILE* f, size_t size, Call&& call) {
  if (!limiter_active()) [[unlikely]] return call();
  Ticket t = ticket_for(id, fd_of(f));
  ticket_wait(t, false);
  size_t r = call();
  ticket_done(t, static_cast<ssize_t>(r * size));
  return r;
}

template <typename Call>
char* line_in(FILE* f, Call&& call) {
  if (!limiter_active()) [[unlikely]] return call();
  Ticket t = ticket_for(CallId::fread, fd_of(f));
  ticket_wait(t, false);
  char* r = call();
  ticket_done(t, r ? static_cast<ssize_t>(std::strlen(r)) : -1);
  return r;
}

template <typename Call>
int line_out(FILE* f, const char* s, Call&& call) {
  if (!limiter_active()) [[unlikely]] return call();
  Ticket t = ticket_for(CallId::fwrite, fd_of(f));
  ticket_wait(t, false);
  int r = call();
  ticket_done(t, r == EOF ? -1 : static_cast<ssize_t>(std::strlen(s)));
  return r;
}

}  // namespace

extern "C" {
#pragma GCC visibility push(default)

[[gnu::noinline]] static size_t fread_slow(void* p, size_t s, size_t n, FILE* f) {
  return items(CallId::fread, f, s, [&] { return real::fread(p, s, n, f); });
}
size_t fread(void* p, size_t s, size_t n, FILE* f) {
  BONSAI_FAST(fread, fread, (p, s, n, f));
  return fread_slow(p, s, n, f);
}
[[gnu::noinline]] static size_t fread_unlocked_slow(void* p, size_t s, size_t n, FILE* f) {
  return items(CallId::fread, f, s, [&] { return real::fread_unlocked(p, s, n, f); });
}
size_t fread_unlocked(void* p, size_t s, size_t n, FILE* f) {
  BONSAI_FAST(fread, fread_unlocked, (p, s, n, f));
  return fread_unlocked_slow(p, s, n, f);
}
[[gnu::noinline]] static size_t __fread_chk_slow(void* p, size_t pl, size_t s, size_t n, FILE* f) {
  return items(CallId::fread, f, s, [&] { return real::__fread_chk(p, pl, s, n, f); });
}
size_t __fread_chk(void* p, size_t pl, size_t s, size_t n, FILE* f) {
  BONSAI_FAST(fread, __fread_chk, (p, pl, s, n, f));
  return __fread_chk_slow(p, pl, s, n, f);
}
[[gnu::noinline]] static size_t __fread_unlocked_chk_slow(void* p, size_t pl, size_t s, size_t n, FILE* f) {
  return items(CallId::fread, f, s, [&] { return real::__fread_unlocked_chk(p, pl, s, n, f); });
}
size_t __fread_unlocked_chk(void* p, size_t pl, size_t s, size_t n, FILE* f) {
  BONSAI_FAST(fread, __fread_unlocked_chk, (p, pl, s, n, f));
  return __fread_unlocked_chk_slow(p, pl, s, n, f);
}
[[gnu::noinline]] static size_t fwrite_slow(const void* p, size_t s, size_t n, FILE* f) {
  return items(CallId::fwrite, f, s, [&] { return real::fwrite(p, s, n, f); });
}
size_t fwrite(const void* p, size_t s, size_t n, FILE* f) {
  BONSAI_FAST(fwrite, fwrite, (p, s, n, f));
  return fwrite_slow(p, s, n, f);
}
[[gnu::noinline]] static size_t fwrite_unlocked_slow(const void* p, size_t s, size_t n, FILE* f) {
  return items(CallId::fwrite, f, s, [&] { return real::fwrite_unlocked(p, s, n, f); });
}
size_t fwrite_unlocked(const void* p, size_t s, size_t n, FILE* f) {
  BONSAI_FAST(fwrite, fwrite_unlocked, (p, s, n, f));
  return fwrite_unlocked_slow(p, s, n, f);
}

char* fgets(char* s, int n, FILE* f) { return line_in(f, [&] { return real::fgets(s, n, f); }); }
[[gnu::noinline]] static char* fgets_unlocked_slow(char* s, int n, FILE* f) {
  return line_in(f, [&] { return real::fgets_unlocked(s, n, f); });
}
char* fgets_unlocked(char* s, int n, FILE* f) {
  BONSAI_FAST(fread, fgets_unlocked, (s, n, f));
  return fgets_unlocked_slow(s, n, f);
}
[[gnu::noinline]] static char* __fgets_chk_slow(char* s, size_t sz, int n, FILE* f) {
  return line_in(f, [&] { return real::__fgets_chk(s, sz, n, f); });
}
char* __fgets_chk(char* s, size_t sz, int n, FILE* f) {
  BONSAI_FAST(fread, __fgets_chk, (s, sz, n, f));
  return __fgets_chk_slow(s, sz, n, f);
}
[[gnu::noinline]] static char* __fgets_unlocked_chk_slow(char* s, size_t sz, int n, FILE* f) {
  return line_in(f, [&] { return real::__fgets_unlocked_chk(s, sz, n, f); });
}
char* __fgets_unlocked_chk(char* s, size_t sz, int n, FILE* f) {
  BONSAI_FAST(fread, __fgets_unlocked_chk, (s, sz, n, f));
  return __fgets_unlocked_chk_slow(s, sz, n, f);
}

[[gnu::noinline]] static int fputs_slow(const char* s, FILE* f) {
  return line_out(f, s, [&] { return real::fputs(s, f); });
}
int fputs(const char* s, FILE* f) {
  BONSAI_FAST(fread, fputs, (s, f));
  return fputs_slow(s, f);
}
[[gnu::noinline]] static int fputs_unlocked_slow(const char* s, FILE* f) {
  return line_out(f, s, [&] { return real::fputs_unlocked(s, f); });
}
int fputs_unlocked(const char* s, FILE* f) {
  BONSAI_FAST(fread, fputs_unlocked, (s, f));
  return fputs_unlocked_slow(s, f);
}

[[gnu::noinline]] static ssize_t getdelim_slow(char** l, size_t* n, int d, FILE* f) {
  return wrap::simple<ssize_t>(CallId::fread, fd_of(f), false, [&] { return real::getdelim(l, n, d, f); },
                               wrap::moved_ssize);
}
ssize_t getdelim(char** l, size_t* n, int d, FILE* f) {
  BONSAI_FAST(fread, getdelim, (l, n, d, f));
  return getdelim_slow(l, n, d, f);
}
[[gnu::noinline]] static ssize_t __getdelim_slow(char** l, size_t* n, int d, FILE* f) {
  return wrap::simple<ssize_t>(CallId::fread, fd_of(f), false, [&] { return real::__getdelim(l, n, d, f); },
                               wrap::moved_ssize);
}
ssize_t __getdelim(char** l, size_t* n, int d, FILE* f) {
  BONSAI_FAST(fread, __getdelim, (l, n, d, f));
  return __getdelim_slow(l, n, d, f);
}
[[gnu::noinline]] static ssize_t getline_slow(char** l, size_t* n, FILE* f) {
  return wrap::simple<ssize_t>(CallId::fread, fd_of(f), false, [&] { return real::getline(l, n, f); },
                               wrap::moved_ssize);
}
ssize_t getline(char** l, size_t* n, FILE* f) {
  BONSAI_FAST(fread, getline, (l, n, f));
  return getline_slow(l, n, f);
}

#pragma GCC visibility pop
}  // extern "C"
