// SPDX-License-Identifier: MIT
// glibc's own functions, behind the names we interpose: real::write is glibc's
// write, never ours. Each pointer is resolved once, on first use (wrappers can run
// before our constructor), so a process pays only for the calls it makes: by a
// lock-free lookup in the objects behind ours (next_symbol.h) once the constructor has
// noted them, else with dlsym(RTLD_NEXT) (one dlsym is ~700 instructions and,
// cold, ~2 us of every exec). A symbol this libc lacks makes the call fail with ENOSYS.
#pragma once
#include <atomic>
#include <csignal>
#include <cstdio>
#include <poll.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

struct mmsghdr;
struct timespec;
struct aiocb;
struct aiocb64;
struct sigevent;

namespace bonsai::real {

// X(return type, name, (parameters), (arguments))
#define BONSAI_REAL_SYMBOLS(X)                                                                     \
  X(ssize_t, read, (int fd, void* b, size_t n), (fd, b, n))                                        \
  X(ssize_t, write, (int fd, const void* b, size_t n), (fd, b, n))                                 \
  X(ssize_t, pread, (int fd, void* b, size_t n, off_t o), (fd, b, n, o))                           \
  X(ssize_t, pread64, (int fd, void* b, size_t n, off64_t o), (fd, b, n, o))                       \
  X(ssize_t, pwrite, (int fd, const void* b, size_t n, off_t o), (fd, b, n, o))                    \
  X(ssize_t, pwrite64, (int fd, const void* b, size_t n, off64_t o), (fd, b, n, o))                \
  X(ssize_t, readv, (int fd, const iovec* v, int c), (fd, v, c))                                   \
  X(ssize_t, writev, (int fd, const iovec* v, int c), (fd, v, c))                                  \
  X(ssize_t, preadv, (int fd, const iovec* v, int c, off_t o), (fd, v, c, o))                      \
  X(ssize_t, preadv64, (int fd, const iovec* v, int c, off64_t o), (fd, v, c, o))                  \
  X(ssize_t, pwritev, (int fd, const iovec* v, int c, off_t o), (fd, v, c, o))                     \
  X(ssize_t, pwritev64, (int fd, const iovec* v, int c, off64_t o), (fd, v, c, o))                 \
  X(ssize_t, preadv2, (int fd, const iovec* v, int c, off_t o, int f), (fd, v, c, o, f))           \
  X(ssize_t, preadv64v2, (int fd, const iovec* v, int c, off64_t o, int f), (fd, v, c, o, f))      \
  X(ssize_t, pwritev2, (int fd, const iovec* v, int c, off_t o, int f), (fd, v, c, o, f))          \
  X(ssize_t, pwritev64v2, (int fd, const iovec* v, int c, off64_t o, int f), (fd, v, c, o, f))     \
  X(ssize_t, send, (int fd, const void* b, size_t n, int f), (fd, b, n, f))                        \
  X(ssize_t, sendto, (int fd, const void* b, size_t n, int f, const sockaddr* a, socklen_t l),     \
    (fd, b, n, f, a, l))                                                                           \
  X(ssize_t, sendmsg, (int fd, const msghdr* m, int f), (fd, m, f))                                \
  X(int, sendmmsg, (int fd, mmsghdr* v, unsigned int n, int f), (fd, v, n, f))                     \
  X(ssize_t, recv, (int fd, void* b, size_t n, int f), (fd, b, n, f))                              \
  X(ssize_t, recvfrom, (int fd, void* b, size_t n, int f, sockaddr* a, socklen_t* l),             \
    (fd, b, n, f, a, l))                                                                           \
  X(ssize_t, recvmsg, (int fd, msghdr* m, int f), (fd, m, f))                                      \
  X(int, recvmmsg, (int fd, mmsghdr* v, unsigned int n, int f, struct timespec* t), (fd, v, n, f, t)) \
  X(ssize_t, sendfile, (int o, int i, off_t* off, size_t n), (o, i, off, n))                       \
  X(ssize_t, sendfile64, (int o, int i, off64_t* off, size_t n), (o, i, off, n))                   \
  X(ssize_t, copy_file_range, (int i, off64_t* io, int o, off64_t* oo, size_t n, unsigned f),     \
    (i, io, o, oo, n, f))                                                                          \
  X(ssize_t, splice, (int i, off64_t* io, int o, off64_t* oo, size_t n, unsigned f),              \
    (i, io, o, oo, n, f))                                                                          \
  X(ssize_t, vmsplice, (int fd, const iovec* v, size_t c, unsigned f), (fd, v, c, f))              \
  X(ssize_t, tee, (int i, int o, size_t n, unsigned f), (i, o, n, f))                              \
  X(ssize_t, __read_chk, (int fd, void* b, size_t n, size_t bl), (fd, b, n, bl))                   \
  X(ssize_t, __pread_chk, (int fd, void* b, size_t n, off_t o, size_t bl), (fd, b, n, o, bl))      \
  X(ssize_t, __pread64_chk, (int fd, void* b, size_t n, off64_t o, size_t bl), (fd, b, n, o, bl))  \
  X(ssize_t, __recv_chk, (int fd, void* b, size_t n, size_t bl, int f), (fd, b, n, bl, f))         \
  X(ssize_t, __recvfrom_chk,                                                                       \
    (int fd, void* b, size_t n, size_t bl, int f, sockaddr* a, socklen_t* l), (fd, b, n, bl, f, a, l)) \
  X(size_t, fread, (void* p, size_t s, size_t n, FILE* f), (p, s, n, f))                           \
  X(size_t, fwrite, (const void* p, size_t s, size_t n, FILE* f), (p, s, n, f))                    \
  X(size_t, fread_unlocked, (void* p, size_t s, size_t n, FILE* f), (p, s, n, f))                  \
  X(size_t, fwrite_unlocked, (const void* p, size_t s, size_t n, FILE* f), (p, s, n, f))           \
  X(size_t, __fread_chk, (void* p, size_t pl, size_t s, size_t n, FILE* f), (p, pl, s, n, f))      \
  X(size_t, __fread_unlocked_chk, (void* p, size_t pl, size_t s, size_t n, FILE* f), (p, pl, s, n, f)) \
  X(char*, fgets, (char* s, int n, FILE* f), (s, n, f))                                            \
  X(char*, fgets_unlocked, (char* s, int n, FILE* f), (s, n, f))                                   \
  X(char*, __fgets_chk, (char* s, size_t sz, int n, FILE* f), (s, sz, n, f))                       \
  X(char*, __fgets_unlocked_chk, (char* s, size_t sz, int n, FILE* f), (s, sz, n, f))              \
  X(int, fputs, (const char* s, FILE* f), (s, f))                                                  \
  X(int, fputs_unlocked, (const char* s, FILE* f), (s, f))                                         \
  X(FILE*, fdopen, (int fd, const char* m), (fd, m))                                               \
  X(ssize_t, getline, (char** l, size_t* n, FILE* f), (l, n, f))                                   \
  X(ssize_t, getdelim, (char** l, size_t* n, int d, FILE* f), (l, n, d, f))                        \
  X(ssize_t, __getdelim, (char** l, size_t* n, int d, FILE* f), (l, n, d, f))                      \
  X(int, open, (const char* p, int f, mode_t m), (p, f, m))                                        \
  X(int, open64, (const char* p, int f, mode_t m), (p, f, m))                                      \
  X(int, __open_2, (const char* p, int f), (p, f))                                                 \
  X(int, __open64_2, (const char* p, int f), (p, f))                                               \
  X(int, openat, (int d, const char* p, int f, mode_t m), (d, p, f, m))                            \
  X(int, openat64, (int d, const char* p, int f, mode_t m), (d, p, f, m))                          \
  X(int, __openat_2, (int d, const char* p, int f), (d, p, f))                                     \
  X(int, __openat64_2, (int d, const char* p, int f), (d, p, f))                                   \
  X(int, creat, (const char* p, mode_t m), (p, m))                                                 \
  X(int, creat64, (const char* p, mode_t m), (p, m))                                               \
  X(int, close, (int fd), (fd))                                                                    \
  X(int, connect, (int fd, const sockaddr* a, socklen_t l), (fd, a, l))                            \
  X(int, accept, (int fd, sockaddr* a, socklen_t* l), (fd, a, l))                                  \
  X(int, accept4, (int fd, sockaddr* a, socklen_t* l, int f), (fd, a, l, f))                       \
  X(int, shutdown, (int fd, int how), (fd, how))                                                   \
  X(int, fsync, (int fd), (fd))                                                                    \
  X(int, fdatasync, (int fd), (fd))                                                                \
  X(int, unlink, (const char* p), (p))                                                             \
  X(int, unlinkat, (int d, const char* p, int f), (d, p, f))                                       \
  X(int, rename, (const char* a, const char* b), (a, b))                                           \
  X(int, mkdir, (const char* p, mode_t m), (p, m))                                                 \
  X(void, _exit, (int s), (s))                                                                     \
  X(void, _Exit, (int s), (s))                                                                     \
  X(long, syscall, (long nr, long a, long b, long c, long d, long e, long f), (nr, a, b, c, d, e, f)) \
  X(int, aio_read, (aiocb* cb), (cb))                                                              \
  X(int, aio_read64, (aiocb64* cb), (cb))                                                          \
  X(int, aio_write, (aiocb* cb), (cb))                                                             \
  X(int, aio_write64, (aiocb64* cb), (cb))                                                         \
  X(int, lio_listio, (int m, aiocb* const* l, int n, sigevent* s), (m, l, n, s))                   \
  X(int, lio_listio64, (int m, aiocb64* const* l, int n, sigevent* s), (m, l, n, s))               \
  X(int, aio_error, (const aiocb* cb), (cb))                                                       \
  X(int, aio_error64, (const aiocb64* cb), (cb))                                                   \
  X(ssize_t, aio_return, (aiocb* cb), (cb))                                                        \
  X(ssize_t, aio_return64, (aiocb64* cb), (cb))                                                    \
  BONSAI_REAL_EXEC_SYMBOLS(X)

// exec and spawn (interpose/exec_calls.cc), close_range/closefrom (they skip the
// kept segment descriptor).
#define BONSAI_REAL_EXEC_SYMBOLS(X)                                                                \
  X(int, execve, (const char* p, char* const* a, char* const* e), (p, a, e))                       \
  X(int, execvpe, (const char* f, char* const* a, char* const* e), (f, a, e))                      \
  X(int, fexecve, (int fd, char* const* a, char* const* e), (fd, a, e))                            \
  X(int, execveat, (int d, const char* p, char* const* a, char* const* e, int fl), (d, p, a, e, fl)) \
  X(int, posix_spawn, (pid_t* pid, const char* p, const posix_spawn_file_actions_t* fa,           \
                       const posix_spawnattr_t* at, char* const* a, char* const* e), (pid, p, fa, at, a, e)) \
  X(int, posix_spawnp, (pid_t* pid, const char* p, const posix_spawn_file_actions_t* fa,          \
                        const posix_spawnattr_t* at, char* const* a, char* const* e), (pid, p, fa, at, a, e)) \
  X(int, close_range, (unsigned lo, unsigned hi, int fl), (lo, hi, fl))                            \
  X(int, dup, (int fd), (fd))                                                                      \
  X(int, dup2, (int fd, int to), (fd, to))                                                         \
  X(int, dup3, (int fd, int to, int fl), (fd, to, fl))                                             \
  X(int, fcntl, (int fd, int cmd, long arg), (fd, cmd, arg))                                       \
  X(int, fcntl64, (int fd, int cmd, long arg), (fd, cmd, arg))                                     \
  X(void, closefrom, (int lo), (lo))                                                               \
  BONSAI_REAL_SIGNAL_SYMBOLS(X)

// SIGBUS dispositions (interpose/signal_calls.cc keep the segment guard first).
#define BONSAI_REAL_SIGNAL_SYMBOLS(X)                                                              \
  X(int, sigaction, (int s, const struct sigaction* a, struct sigaction* o), (s, a, o))            \
  X(sighandler_t, signal, (int s, sighandler_t h), (s, h))                                        \
  BONSAI_REAL_POLL_SYMBOLS(X)

// Readiness (interpose/poll_calls.cc: framed sockets with decoded bytes waiting).
#define BONSAI_REAL_POLL_SYMBOLS(X)                                                                \
  X(int, poll, (pollfd* f, nfds_t n, int t), (f, n, t))                                            \
  X(int, ppoll, (pollfd* f, nfds_t n, const timespec* t, const sigset_t* s), (f, n, t, s))         \
  X(int, __poll_chk, (pollfd* f, nfds_t n, int t, size_t l), (f, n, t, l))                         \
  X(int, __ppoll_chk, (pollfd* f, nfds_t n, const timespec* t, const sigset_t* s, size_t l),      \
    (f, n, t, s, l))                                                                               \
  X(int, select, (int n, fd_set* r, fd_set* w, fd_set* e, timeval* t), (n, r, w, e, t))            \
  X(int, pselect, (int n, fd_set* r, fd_set* w, fd_set* e, const timespec* t, const sigset_t* s),  \
    (n, r, w, e, t, s))                                                                            \
  X(int, epoll_wait, (int ep, epoll_event* ev, int max, int t), (ep, ev, max, t))                  \
  X(int, epoll_pwait, (int ep, epoll_event* ev, int max, int t, const sigset_t* s), (ep, ev, max, t, s)) \
  X(int, epoll_pwait2, (int ep, epoll_event* ev, int max, const timespec* t, const sigset_t* s),       \
    (ep, ev, max, t, s))                                                                           \
  X(int, epoll_ctl, (int ep, int op, int fd, epoll_event* ev), (ep, op, fd, ev))

// Interposed names with no glibc pointer of their own: the exec l-forms and execv/execvp
// are made from execve/execvpe (interpose/exec_calls.cc). With the table above, every
// name bonsai.map exports (tests/tools/check_symbols.sh holds the three together).
#define BONSAI_OWN_SYMBOLS(Y) Y(execl) Y(execle) Y(execlp) Y(execv) Y(execvp)

// NAME_ptr: the function real::NAME calls (glibc's, or strict mode's replacement,
// interpose/strict_calls.h). resolve_NAME(): glibc's NAME itself, looked up now (an
// ENOSYS stub if this libc lacks it) and kept in NAME_ptr unless something is there
// already: how a replacement reaches the glibc function it stands in for.
#define BONSAI_X(ret, name, params, args)                                      \
  using name##_fn = ret(*) params;                                             \
  extern constinit std::atomic<name##_fn> name##_ptr;                          \
  name##_fn resolve_##name() noexcept;                                         \
  inline ret name params {                                                     \
    name##_fn fn_ = name##_ptr.load(std::memory_order_relaxed);                \
    if (!fn_) [[unlikely]] fn_ = resolve_##name();                              \
    return fn_ args;                                                           \
  }
BONSAI_REAL_SYMBOLS(BONSAI_X)
#undef BONSAI_X

// Resolved by the constructor when the lock-free lookup is not available (then every
// name needs dlsym): the calls made where dlsym (which takes the loader's lock) had
// better not run: in a vfork()ed child or a child forked
// from threads, between fork and exec (exec, dup2, close_range, closefrom, _exit); in
// signal handlers (write, _exit); under a lock of ours or of the application's, where
// a thread inside dlopen (holding the loader's lock) running a constructor that waits
// for the same lock would deadlock with us: the stdio pieces made under the FILE's lock
// (interpose/stdio_calls.cc). Compression holds its connection locks across many real
// calls: with compression set, the constructor resolves everything (resolve_all).
#define BONSAI_REAL_EAGER(Z)                                                                        \
  Z(execve) Z(execvpe) Z(fexecve) Z(execveat) Z(dup2) Z(close_range) Z(closefrom) Z(_exit) Z(_Exit) \
  Z(write) Z(fwrite_unlocked) Z(fread_unlocked) Z(fgets_unlocked)

// Resolves BONSAI_REAL_EAGER now (the constructor calls it).
void resolve_eager() noexcept;

// Resolves every pointer now.
void resolve_all() noexcept;

}  // namespace bonsai::real
