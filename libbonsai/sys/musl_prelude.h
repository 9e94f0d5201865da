// SPDX-License-Identifier: MIT
// The musl build's first lines (docs/reference/libc.md; the Makefile's MUSL_CXXFLAGS
// include it before every source file). The library is compiled by g++ against musl's C
// headers (-nostdinc) and the header-only pieces of libstdc++ it uses (<atomic>,
// <type_traits>, <cstring>, <string_view>, ...), whose configuration was made for glibc.
// What that configuration names and musl lacks is supplied here, declared only: the
// library calls none of it, and a call would fail the link (-Wl,--no-undefined), not
// run. Anything else libstdc++'s configuration assumed of glibc is a compile error.
#pragma once

#if defined(__GLIBC__)
#error "musl_prelude.h is for the musl build only"
#endif

// libstdc++'s os_defines.h asks glibc's version: musl is no glibc.
#define __GLIBC_PREREQ(maj, min) 0

#include <locale.h>
#include <pthread.h>
#include <time.h>

// <bits/c++locale.h> names glibc's spelling of locale_t.
typedef locale_t __locale_t;

// <bits/std_mutex.h> (pulled in by <atomic>'s waits) names glibc's
// pthread_cond_clockwait in an inline function the library never calls.
extern "C" int pthread_cond_clockwait(pthread_cond_t*, pthread_mutex_t*, clockid_t, const struct timespec*);

// musl's headers make the LFS64 functions macros of the plain ones (under _GNU_SOURCE,
// which g++ defines). The library exports those names as functions of its own
// (interpose/real.h, bonsai.map): a musl program built against older headers, or
// another library, may call them by name. So the headers that define the macros come
// first, and the function macros go; the type macros (off64_t, aiocb64) stay.
#include <aio.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <unistd.h>
#undef pread64
#undef pwrite64
#undef preadv64
#undef pwritev64
#undef sendfile64
#undef open64
#undef openat64
#undef creat64
#undef aio_read64
#undef aio_write64
#undef aio_error64
#undef aio_return64
#undef lio_listio64

// What glibc declares and musl does not, among the functions the library defines as
// wrappers (and calls from syscall(), interpose/syscall_call.cc): declared as glibc does.
#include <sys/types.h>
struct iovec;
extern "C" {
ssize_t pread64(int, void*, size_t, off_t);
ssize_t pwrite64(int, const void*, size_t, off_t);
ssize_t preadv64(int, const struct iovec*, int, off_t);
ssize_t pwritev64(int, const struct iovec*, int, off_t);
ssize_t preadv2(int, const struct iovec*, int, off_t, int);
ssize_t pwritev2(int, const struct iovec*, int, off_t, int);
ssize_t preadv64v2(int, const struct iovec*, int, off_t, int);
ssize_t pwritev64v2(int, const struct iovec*, int, off_t, int);
ssize_t sendfile64(int, int, off_t*, size_t);
int open64(const char*, int, ...);
int openat64(int, const char*, int, ...);
int creat64(const char*, mode_t);
int close_range(unsigned, unsigned, int);
}

// preadv2/pwritev2's flag (<linux/fs.h>; glibc's <sys/uio.h> has it).
#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif
