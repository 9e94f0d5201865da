// SPDX-License-Identifier: MIT
// Safe, bounded appends to the files the library writes (see out_file.h).
#include "log/out_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "log/blog.h"
#include "sys/raw_syscall.h"
#include "sys/startup.h"

namespace bonsai {
namespace {

// Direct system calls (sys/raw_syscall.h: never our own interposed symbols, never a
// cancellation point); a negative result is -errno and errno is left alone on x86-64.
template <class A, class B = long, class C = long, class D = long>
long sys(long nr, A a, B b = 0, C c = 0, D d = 0) noexcept {
  return raw_syscall4(nr, (long)a, (long)b, (long)c, (long)d);
}

void close_fd(long fd) noexcept {
  if (fd >= 0) sys(SYS_close, fd);
}

// Waits at most `ms` for room in `fd`.
void wait_writable(int fd, int ms) noexcept {
  pollfd p{fd, POLLOUT, 0};
#if defined(SYS_poll)
  sys(SYS_poll, &p, 1, ms);
#else
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  long ret = ::syscall(SYS_ppoll, &p, 1L, &ts, nullptr, 8L);
  (void)ret;
#endif
}

const char* kind_of(mode_t m) noexcept {
  if (S_ISLNK(m)) return "it is a symbolic link (never followed)";
  if (S_ISDIR(m)) return "it is a directory";
  if (S_ISCHR(m)) return "it is a character device (only regular files and FIFOs are written)";
  if (S_ISBLK(m)) return "it is a block device (only regular files and FIFOs are written)";
  if (S_ISSOCK(m)) return "it is a socket (only regular files and FIFOs are written)";
  return "it is not a regular file";
}

// The errno's name, as glibc's strerrorname_np gives it: glibc has it only since 2.32
// and musl not at all, so the names an open or a write of these files can
// meet are listed here.
const char* errname(long neg) noexcept {
  switch (-neg) {
#define BONSAI_E(e) \
  case e: return #e;
    BONSAI_E(EPERM) BONSAI_E(ENOENT) BONSAI_E(EINTR) BONSAI_E(EIO) BONSAI_E(ENXIO) BONSAI_E(EBADF)
    BONSAI_E(EAGAIN) BONSAI_E(ENOMEM) BONSAI_E(EACCES) BONSAI_E(EFAULT) BONSAI_E(EBUSY) BONSAI_E(EEXIST)
    BONSAI_E(ENODEV) BONSAI_E(ENOTDIR) BONSAI_E(EISDIR) BONSAI_E(EINVAL) BONSAI_E(ENFILE) BONSAI_E(EMFILE)
    BONSAI_E(ETXTBSY) BONSAI_E(EFBIG) BONSAI_E(ENOSPC) BONSAI_E(ESPIPE) BONSAI_E(EROFS) BONSAI_E(EPIPE)
    BONSAI_E(ENAMETOOLONG) BONSAI_E(ENOSYS) BONSAI_E(ELOOP) BONSAI_E(EOVERFLOW) BONSAI_E(EOPNOTSUPP)
    BONSAI_E(ECONNRESET) BONSAI_E(ENOTCONN) BONSAI_E(ETIMEDOUT) BONSAI_E(ESTALE) BONSAI_E(EDQUOT)
#undef BONSAI_E
    default: return "error";
  }
}

bool writable_kind(mode_t m) noexcept { return S_ISREG(m) || S_ISFIFO(m); }

// "%p" -> pid. @return false if the result does not fit.
bool expand(const char* tmpl, char* out, size_t cap) noexcept {
  char pid[16];
  int pl = std::snprintf(pid, sizeof pid, "%d", static_cast<int>(getpid()));
  size_t o = 0;
  for (const char* p = tmpl; *p; ++p) {
    if (p[0] == '%' && p[1] == 'p') {
      if (o + static_cast<size_t>(pl) >= cap) return false;
      std::memcpy(out + o, pid, static_cast<size_t>(pl));
      o += static_cast<size_t>(pl);
      ++p;
    } else {
      if (o + 1 >= cap) return false;
      out[o++] = *p;
    }
  }
  out[o] = '\0';
  return true;
}

}  // namespace

BONSAI_STARTUP bool out_path_copy(const char* what, const char* value, char (&dst)[kOutPathMax]) noexcept {
  dst[0] = '\0';
  if (!value || !*value) return false;
  size_t len = std::strlen(value);
  size_t cwd_len = 0;
  if (value[0] != '/') {
    long n = sys(SYS_getcwd, dst, sizeof dst);  // length with its NUL
    if (n > 1 && dst[0] == '/') cwd_len = static_cast<size_t>(n - 1);
    else dst[0] = '\0';  // no reachable current directory: keep the path relative
  }
  if (cwd_len + 1 + len + 1 > sizeof dst) {
    dst[0] = '\0';
    blog(LogLevel::Warn, "%s: path longer than %zu bytes; nothing will be written", what, sizeof dst - 1);
    return false;
  }
  if (cwd_len) {
    if (dst[cwd_len - 1] != '/') dst[cwd_len++] = '/';
    while (len > 2 && value[0] == '.' && value[1] == '/') value += 2, len -= 2;  // "./x" -> "x"
  }
  std::memcpy(dst + cwd_len, value, len + 1);
  return out_path_probe(what, dst);
}

bool out_path_probe(const char* what, char (&dst)[kOutPathMax]) noexcept {
  // Said now, while the program's stderr is surely open: coreutils (cat, dd) close it
  // before the exit hooks run, so a warning at exit never reaches their user. Only what
  // is known now: there is no file yet and its directory cannot take one (absent, not
  // ours to write). Anything else is checked at exit, as before (out_file_append).
  if (getuid() != geteuid() || getgid() != getegid()) return true;  // access checks the real ids
  char dir[kOutPathMax];
  std::memcpy(dir, dst, kOutPathMax);
  char* slash = std::strrchr(dir, '/');
  if (!slash || std::strstr(dir, "%p")) return true;  // the pid's own directory is not known yet
  const char* base = dst + (slash - dir) + 1;
  if (slash == dir) dir[1] = '\0';
  else *slash = '\0';
  struct stat st{};
  if (!*base || sys(SYS_newfstatat, AT_FDCWD, dst, &st, AT_SYMLINK_NOFOLLOW) != -ENOENT)
    return true;  // something is there: judged at exit, as before (what it is, whose)
  long r = sys(SYS_faccessat, AT_FDCWD, dir, W_OK | X_OK);
  if (r == 0) return true;
  blog(LogLevel::Warn, "%s: not writing to '%s': its directory cannot take a new file (%s): nothing will be written",
       what, dst, errname(r));
  dst[0] = '\0';
  return false;
}

bool out_file_append(const char* what, const char* tmpl, const char* buf, size_t len) noexcept {
  int saved = errno;
  char path[kOutPathMax + 64];
  const char* why = nullptr;
  char why_buf[96];
  long dirfd = -1, fd = -1;
  bool ok = false;
  struct stat ds{}, st{};
  if (!expand(tmpl, path, sizeof path)) {
    blog(LogLevel::Warn, "%s: path too long once %%p is expanded; not written", what);
    errno = saved;
    return false;
  }
  do {
    // The directory, opened once (O_PATH: no read permission needed, nothing
    // triggered); everything after is relative to it, so that what is checked is
    // what is opened. Links in the directory part are the operator's and followed.
    char* slash = std::strrchr(path, '/');
    const char* base = slash ? slash + 1 : path;
    if (!*base) {
      why = "the path names a directory";
      break;
    }
    char dir[kOutPathMax + 64];
    if (!slash) std::strcpy(dir, ".");
    else if (slash == path) std::strcpy(dir, "/");
    else {
      std::memcpy(dir, path, static_cast<size_t>(slash - path));
      dir[slash - path] = '\0';
    }
    dirfd = sys(SYS_openat, AT_FDCWD, dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
    if (dirfd < 0 || sys(SYS_newfstatat, dirfd, "", &ds, AT_EMPTY_PATH) < 0) {
      std::snprintf(why_buf, sizeof why_buf, "cannot open its directory (%s)", errname(dirfd));
      why = why_buf;
      break;
    }
    uid_t me = geteuid();
    // Can someone else (not us, not root) create or replace names in it?
    bool shared_dir = (ds.st_mode & (S_IWGRP | S_IWOTH)) || (ds.st_uid != me && ds.st_uid != 0);
    auto foreign = [&](const struct stat& s) -> const char* {
      if (!shared_dir) return nullptr;
      if (s.st_uid != me && s.st_uid != 0) {
        std::snprintf(why_buf, sizeof why_buf, "it belongs to uid %u and others can write its directory",
                      static_cast<unsigned>(s.st_uid));
        return why_buf;
      }
      if (S_ISREG(s.st_mode) && s.st_nlink > 1) return "it has several hard links and others can write its directory";
      return nullptr;
    };
    // Look before opening: a device or another user's FIFO is not even opened.
    if (sys(SYS_newfstatat, dirfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (!writable_kind(st.st_mode)) {
        why = kind_of(st.st_mode);
        break;
      }
      if ((why = foreign(st))) break;
    }
    fd = sys(SYS_openat, dirfd, base, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
             0600);
    if (fd < 0) {
      if (fd == -ELOOP) why = "it is a symbolic link (never followed)";
      else if (fd == -ENXIO) why = "it is a FIFO with no reader";
      else if (fd == -EISDIR) why = "it is a directory";
      else {
        std::snprintf(why_buf, sizeof why_buf, "cannot open it (%s)", errname(fd));
        why = why_buf;
      }
      break;
    }
    // What was opened (it may have been swapped since the look).
    if (sys(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH) < 0) {
      why = "cannot check what was opened";
      break;
    }
    if (!writable_kind(st.st_mode)) {
      why = kind_of(st.st_mode);
      break;
    }
    if ((why = foreign(st))) break;
    // Bounded write: a full pipe (EAGAIN) gets kOutPollMs waits up to the budget.
    size_t done = 0;
    int waited_ms = 0;
    while (done < len) {
      long n = sys(SYS_write, fd, buf + done, len - done);
      if (n > 0) {
        done += static_cast<size_t>(n);
        continue;
      }
      if ((n == -EAGAIN || n == -EINTR) && waited_ms < kOutWriteBudgetMs) {
        if (n == -EAGAIN) wait_writable(static_cast<int>(fd), kOutPollMs);
        waited_ms += kOutPollMs;
        continue;
      }
      if (n == -EAGAIN) {
        std::snprintf(why_buf, sizeof why_buf, "destination full for %d ms; %zu of %zu bytes dropped", kOutWriteBudgetMs,
                      len - done, len);
      } else {
        std::snprintf(why_buf, sizeof why_buf, "write failed (%s); %zu of %zu bytes dropped",
                      n < 0 ? errname(n) : "no progress", len - done, len);
      }
      why = why_buf;
      break;
    }
    ok = done == len;
  } while (false);
  close_fd(fd);
  close_fd(dirfd);
  if (why) blog(LogLevel::Warn, "%s: not writing to '%s': %s", what, path, why);
  errno = saved;
  return ok;
}

}  // namespace bonsai
