// SPDX-License-Identifier: MIT
// Zero-copy calls made by the supervisor for a target (see sv_emulate.h).
#include "supervisor/sv_emulate.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "supervisor/sv_target.h"

namespace bonsai::ctl {

bool sv_end_never_waits(mode_t mode, int status_flags, bool splice_nonblock) noexcept {
  if (S_ISREG(mode) || S_ISBLK(mode)) return true;
  if (status_flags & O_NONBLOCK) return true;
  return splice_nonblock && S_ISFIFO(mode);
}

namespace {

bool end_ok(int fd, bool splice_nonblock) {
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0) return false;
  int fl = ::fcntl(fd, F_GETFL);
  return fl >= 0 && sv_end_never_waits(st.st_mode, fl, splice_nonblock);
}

}  // namespace

bool sv_emu_prepare(const SvSyscall& sc, const __u64 a[6], int pidfd, uint64_t bound, SvEmu& e) {
  e = SvEmu{};
  if (!bound) return false;
  int in_arg, out_arg;
  switch (sc.nr) {
    case SYS_sendfile:  // sendfile(out, in, off*, count)
      in_arg = 1, out_arg = 0;
      e.off_in = a[2];
      e.count = a[3];
      break;
    case SYS_splice:           // splice(in, off_in*, out, off_out*, len, flags)
    case SYS_copy_file_range:  // copy_file_range(in, off_in*, out, off_out*, len, flags)
      in_arg = 0, out_arg = 2;
      e.off_in = a[1];
      e.off_out = a[3];
      e.count = a[4];
      e.flags = static_cast<unsigned>(a[5]);
      break;
    default:
      return false;
  }
  if (e.count > bound) e.count = bound;
  bool nb = sc.nr == SYS_splice && (e.flags & SPLICE_F_NONBLOCK);
  e.in_fd = sv_fd_copy(pidfd, static_cast<int>(a[in_arg]));
  e.out_fd = sv_fd_copy(pidfd, static_cast<int>(a[out_arg]));
  if (!end_ok(e.in_fd, nb) || !end_ok(e.out_fd, nb)) {
    sv_emu_close(e);
    return false;
  }
  e.nr = sc.nr;
  return true;
}

int64_t sv_emu_perform(const SvEmu& e, int tid) {
  loff_t off_in = 0, off_out = 0;
  if (e.off_in && !sv_mem_read(tid, e.off_in, &off_in, sizeof off_in)) return -EFAULT;
  if (e.off_out && !sv_mem_read(tid, e.off_out, &off_out, sizeof off_out)) return -EFAULT;
  loff_t* pin = e.off_in ? &off_in : nullptr;
  loff_t* pout = e.off_out ? &off_out : nullptr;
  ssize_t r;
  do {
    switch (e.nr) {
      case SYS_sendfile: r = ::sendfile(e.out_fd, e.in_fd, pin, e.count); break;
      case SYS_splice: r = ::splice(e.in_fd, pin, e.out_fd, pout, e.count, e.flags); break;
      case SYS_copy_file_range: r = ::copy_file_range(e.in_fd, pin, e.out_fd, pout, e.count, e.flags); break;
      default: return -ENOSYS;
    }
  } while (r < 0 && errno == EINTR);
  if (r < 0) return -errno;
  // The kernel writes the offsets back only when the call succeeds.
  if (pin) sv_mem_write(tid, e.off_in, &off_in, sizeof off_in);
  if (pout) sv_mem_write(tid, e.off_out, &off_out, sizeof off_out);
  return r;
}

void sv_emu_close(SvEmu& e) {
  if (e.in_fd >= 0) ::close(e.in_fd);
  if (e.out_fd >= 0) ::close(e.out_fd);
  e.in_fd = e.out_fd = -1;
}

}  // namespace bonsai::ctl
