// SPDX-License-Identifier: MIT
// The marked calls of strict mode (see strict_calls.h): for each glibc function behind
// `real::` that is one system call, the same system call made here with the launch's
// mark in the upper half of its first argument. The forms without a descriptor (open,
// creat, unlink, rename, mkdir) are made as their *at forms on AT_FDCWD, which carry
// one. glibc's cancellation points stay cancellation points the way glibc 2.36 makes
// them: asynchronous cancellation for the duration of the call.
#include "interpose/strict_calls.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <type_traits>

#include "abi/strict_mark.h"
#include "abi/syscall_table.h"
#include "interpose/real.h"
#include "log/blog.h"
#include "runtime/options.h"
#include "shm/shm_attach.h"
#include "sys/late_bound.h"
#include "sys/raw_syscall.h"
#include "sys/startup.h"

namespace bonsai::strict {

constinit std::atomic<uint32_t> g_mark{0};

namespace {

inline long marked(long fd) noexcept {
  return static_cast<long>(strict_marked_arg(g_mark.load(std::memory_order_relaxed), static_cast<uint64_t>(fd)));
}

// glibc's convention: -1 and errno on failure.
inline long result(long r) noexcept {
  if (r < 0 && r > -4096) {
    errno = static_cast<int>(-r);
    return -1;
  }
  return r;
}

// glibc's __libc_single_threaded (2.32 on), looked up rather than linked;
// without it (an older glibc, musl) every process counts as threaded.
constinit LateSlot g_single_threaded{0};

bool single_threaded() noexcept {
  const auto* flag = static_cast<const volatile char*>(late_symbol(g_single_threaded, "__libc_single_threaded", true));
  return flag && *flag;
}

// A cancellation point: asynchronous cancellation while the call runs (a pending
// cancellation acts at once, one arriving in a blocked call unwinds from it). As in
// glibc, a process that has never had a second thread skips it (nobody can cancel it).
class Cancellable {
 public:
  Cancellable() noexcept {
    if (!single_threaded()) pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old_);
  }
  ~Cancellable() {
    if (old_ != PTHREAD_CANCEL_ASYNCHRONOUS) pthread_setcanceltype(old_, &old_);
  }
  Cancellable(const Cancellable&) = delete;
  Cancellable& operator=(const Cancellable&) = delete;

 private:
  int old_ = PTHREAD_CANCEL_ASYNCHRONOUS;  // (restores nothing unless changed above)
};

template <bool Cancel>
long call(long nr, long a, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) noexcept {
  long r;
  if constexpr (Cancel) {
    Cancellable point;
    r = raw_syscall6(nr, marked(a), b, c, d, e, f);
  } else {
    r = raw_syscall6(nr, marked(a), b, c, d, e, f);
  }
  return result(r);
}

template <typename T>
inline long L(T v) noexcept {
  if constexpr (std::is_pointer_v<T>) return reinterpret_cast<long>(v);
  else return static_cast<long>(v);
}

constexpr long kCwd = AT_FDCWD;

ssize_t s_read(int fd, void* b, size_t n) { return call<true>(SYS_read, fd, L(b), L(n)); }
ssize_t s_write(int fd, const void* b, size_t n) { return call<true>(SYS_write, fd, L(b), L(n)); }
ssize_t s_pread(int fd, void* b, size_t n, off_t o) { return call<true>(SYS_pread64, fd, L(b), L(n), o); }
ssize_t s_pwrite(int fd, const void* b, size_t n, off_t o) { return call<true>(SYS_pwrite64, fd, L(b), L(n), o); }
ssize_t s_readv(int fd, const iovec* v, int c) { return call<true>(SYS_readv, fd, L(v), c); }
ssize_t s_writev(int fd, const iovec* v, int c) { return call<true>(SYS_writev, fd, L(v), c); }
// (fd, iov, count, pos_l, pos_h): pos_l holds the whole offset on 64-bit, pos_h is 0
ssize_t s_preadv(int fd, const iovec* v, int c, off_t o) { return call<true>(SYS_preadv, fd, L(v), c, o, 0); }
ssize_t s_pwritev(int fd, const iovec* v, int c, off_t o) { return call<true>(SYS_pwritev, fd, L(v), c, o, 0); }
ssize_t s_preadv2(int fd, const iovec* v, int c, off_t o, int fl) {
  return call<true>(SYS_preadv2, fd, L(v), c, o, 0, fl);
}
ssize_t s_pwritev2(int fd, const iovec* v, int c, off_t o, int fl) {
  return call<true>(SYS_pwritev2, fd, L(v), c, o, 0, fl);
}
ssize_t s_sendto(int fd, const void* b, size_t n, int fl, const sockaddr* a, socklen_t l) {
  return call<true>(SYS_sendto, fd, L(b), L(n), fl, L(a), l);
}
ssize_t s_send(int fd, const void* b, size_t n, int fl) { return call<true>(SYS_sendto, fd, L(b), L(n), fl, 0, 0); }
ssize_t s_sendmsg(int fd, const msghdr* m, int fl) { return call<true>(SYS_sendmsg, fd, L(m), fl); }
int s_sendmmsg(int fd, mmsghdr* v, unsigned int n, int fl) {
  return static_cast<int>(call<true>(SYS_sendmmsg, fd, L(v), n, fl));
}
ssize_t s_recvfrom(int fd, void* b, size_t n, int fl, sockaddr* a, socklen_t* l) {
  return call<true>(SYS_recvfrom, fd, L(b), L(n), fl, L(a), L(l));
}
ssize_t s_recv(int fd, void* b, size_t n, int fl) { return call<true>(SYS_recvfrom, fd, L(b), L(n), fl, 0, 0); }
ssize_t s_recvmsg(int fd, msghdr* m, int fl) { return call<true>(SYS_recvmsg, fd, L(m), fl); }
int s_recvmmsg(int fd, mmsghdr* v, unsigned int n, int fl, struct timespec* t) {
  return static_cast<int>(call<true>(SYS_recvmmsg, fd, L(v), n, fl, L(t)));
}
// sendfile is no cancellation point in glibc
ssize_t s_sendfile(int o, int i, off_t* off, size_t n) { return call<false>(SYS_sendfile, o, i, L(off), L(n)); }
ssize_t s_copy_file_range(int i, off64_t* io, int o, off64_t* oo, size_t n, unsigned fl) {
  return call<true>(SYS_copy_file_range, i, L(io), o, L(oo), L(n), fl);
}
ssize_t s_splice(int i, off64_t* io, int o, off64_t* oo, size_t n, unsigned fl) {
  return call<true>(SYS_splice, i, L(io), o, L(oo), L(n), fl);
}
ssize_t s_vmsplice(int fd, const iovec* v, size_t c, unsigned fl) {
  return call<true>(SYS_vmsplice, fd, L(v), L(c), fl);
}
ssize_t s_tee(int i, int o, size_t n, unsigned fl) { return call<true>(SYS_tee, i, o, L(n), fl); }

// A fortified or checking form whose check fails: glibc's own, which reports it
// (resolve_NAME: glibc's function through the one table, interpose/real.h, not the
// marked replacement installed in its pointer).
ssize_t s_read_chk(int fd, void* b, size_t n, size_t bl) {
  if (n > bl) return real::resolve___read_chk()(fd, b, n, bl);
  return s_read(fd, b, n);
}
ssize_t s_pread_chk(int fd, void* b, size_t n, off_t o, size_t bl) {
  if (n > bl) return real::resolve___pread_chk()(fd, b, n, o, bl);
  return s_pread(fd, b, n, o);
}
ssize_t s_recv_chk(int fd, void* b, size_t n, size_t bl, int fl) {
  if (n > bl) return real::resolve___recv_chk()(fd, b, n, bl, fl);
  return s_recv(fd, b, n, fl);
}
ssize_t s_recvfrom_chk(int fd, void* b, size_t n, size_t bl, int fl, sockaddr* a, socklen_t* l) {
  if (n > bl) return real::resolve___recvfrom_chk()(fd, b, n, bl, fl, a, l);
  return s_recvfrom(fd, b, n, fl, a, l);
}

int s_openat(int d, const char* p, int fl, mode_t m) { return static_cast<int>(call<true>(SYS_openat, d, L(p), fl, m)); }
int s_open(const char* p, int fl, mode_t m) { return s_openat(static_cast<int>(kCwd), p, fl, m); }
// The fortified forms fail (glibc's message) when the flags need a mode they lack.
inline bool needs_mode(int fl) { return (fl & O_CREAT) || (fl & O_TMPFILE) == O_TMPFILE; }
int s_open_2(const char* p, int fl) {
  if (needs_mode(fl)) return real::resolve___open_2()(p, fl);
  return s_open(p, fl, 0);
}
int s_openat_2(int d, const char* p, int fl) {
  if (needs_mode(fl)) return real::resolve___openat_2()(d, p, fl);
  return s_openat(d, p, fl, 0);
}
int s_creat(const char* p, mode_t m) { return s_open(p, O_CREAT | O_WRONLY | O_TRUNC, m); }
int s_close(int fd) { return static_cast<int>(call<true>(SYS_close, fd)); }
int s_connect(int fd, const sockaddr* a, socklen_t l) { return static_cast<int>(call<true>(SYS_connect, fd, L(a), l)); }
int s_accept(int fd, sockaddr* a, socklen_t* l) { return static_cast<int>(call<true>(SYS_accept, fd, L(a), L(l))); }
int s_accept4(int fd, sockaddr* a, socklen_t* l, int fl) {
  return static_cast<int>(call<true>(SYS_accept4, fd, L(a), L(l), fl));
}
int s_fsync(int fd) { return static_cast<int>(call<true>(SYS_fsync, fd)); }
int s_fdatasync(int fd) { return static_cast<int>(call<true>(SYS_fdatasync, fd)); }
int s_unlinkat(int d, const char* p, int fl) { return static_cast<int>(call<false>(SYS_unlinkat, d, L(p), fl)); }
int s_unlink(const char* p) { return s_unlinkat(static_cast<int>(kCwd), p, 0); }
int s_rename(const char* a, const char* b) {
  return static_cast<int>(call<false>(SYS_renameat, kCwd, L(a), kCwd, L(b)));
}
int s_mkdir(const char* p, mode_t m) { return static_cast<int>(call<false>(SYS_mkdirat, kCwd, L(p), m)); }

// syscall(): the calls the filter checks whose first argument is a descriptor or an
// *at directory (the table's `marked` rows, abi/syscall_table.h) and io_setup (a count)
// are marked; any other number goes as asked (open, creat, unlink, rename and mkdir by
// number reach the supervisor, which charges them: the library's syscall() does not).
bool marks_first_arg(long nr) noexcept {
  const SyscallEntry* row = syscall_entry(nr);
  return row ? row->marked : nr == SYS_io_setup;
}
long s_syscall(long nr, long a, long b, long c, long d, long e, long f) {
  return result(raw_syscall6(nr, marks_first_arg(nr) ? marked(a) : a, b, c, d, e, f));
}

void install() noexcept {
  using namespace real;
  auto put = [](auto& ptr, auto fn) { ptr.store(fn, std::memory_order_relaxed); };
  put(read_ptr, s_read);
  put(write_ptr, s_write);
  put(pread_ptr, s_pread);
  put(pread64_ptr, s_pread);
  put(pwrite_ptr, s_pwrite);
  put(pwrite64_ptr, s_pwrite);
  put(readv_ptr, s_readv);
  put(writev_ptr, s_writev);
  put(preadv_ptr, s_preadv);
  put(preadv64_ptr, s_preadv);
  put(pwritev_ptr, s_pwritev);
  put(pwritev64_ptr, s_pwritev);
  put(preadv2_ptr, s_preadv2);
  put(preadv64v2_ptr, s_preadv2);
  put(pwritev2_ptr, s_pwritev2);
  put(pwritev64v2_ptr, s_pwritev2);
  put(send_ptr, s_send);
  put(sendto_ptr, s_sendto);
  put(sendmsg_ptr, s_sendmsg);
  put(sendmmsg_ptr, s_sendmmsg);
  put(recv_ptr, s_recv);
  put(recvfrom_ptr, s_recvfrom);
  put(recvmsg_ptr, s_recvmsg);
  put(recvmmsg_ptr, s_recvmmsg);
  put(sendfile_ptr, s_sendfile);
  put(sendfile64_ptr, s_sendfile);
  put(copy_file_range_ptr, s_copy_file_range);
  put(splice_ptr, s_splice);
  put(vmsplice_ptr, s_vmsplice);
  put(tee_ptr, s_tee);
  put(__read_chk_ptr, s_read_chk);
  put(__pread_chk_ptr, s_pread_chk);
  put(__pread64_chk_ptr, s_pread_chk);
  put(__recv_chk_ptr, s_recv_chk);
  put(__recvfrom_chk_ptr, s_recvfrom_chk);
  put(open_ptr, s_open);
  put(open64_ptr, s_open);
  put(__open_2_ptr, s_open_2);
  put(__open64_2_ptr, s_open_2);
  put(openat_ptr, s_openat);
  put(openat64_ptr, s_openat);
  put(__openat_2_ptr, s_openat_2);
  put(__openat64_2_ptr, s_openat_2);
  put(creat_ptr, s_creat);
  put(creat64_ptr, s_creat);
  put(close_ptr, s_close);
  put(connect_ptr, s_connect);
  put(accept_ptr, s_accept);
  put(accept4_ptr, s_accept4);
  put(fsync_ptr, s_fsync);
  put(fdatasync_ptr, s_fdatasync);
  put(unlink_ptr, s_unlink);
  put(unlinkat_ptr, s_unlinkat);
  put(rename_ptr, s_rename);
  put(mkdir_ptr, s_mkdir);
  put(syscall_ptr, s_syscall);
}

}  // namespace

BONSAI_STARTUP void setup() noexcept {
  const char* v = option_env(Opt::strict);
  if (!v || !*v) return;
  // "MARK:SERVICE": the mark of the launch that started SERVICE.
  const char* colon = std::strchr(v, ':');
  char hex[9] = {};
  uint32_t mark = 0;
  if (!colon || colon - v != 8 || (std::memcpy(hex, v, 8), !strict_mark_parse(hex, mark))) {
    BONSAI_LOG_ONCE(LogLevel::Warn, "BONSAI_STRICT='%.40s' is not MARK:SERVICE: this process's calls go to the "
                    "supervisor unmarked", v);
    return;
  }
  const char* service = option_env(Opt::service);
  if (!service || std::strcmp(service, colon + 1) != 0) return;  // another service's launch: its supervisor charges us
  if (!shm_attached()) return;  // the library limits nothing here: the supervisor does
  g_mark.store(mark, std::memory_order_relaxed);
  install();
}

}  // namespace bonsai::strict
