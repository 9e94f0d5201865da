// SPDX-License-Identifier: MIT
// Protected reads made and timed by the supervisor (see sv_protect.h).
#include "supervisor/sv_protect.h"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <pthread.h>
#include <linux/seccomp.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "supervisor/sv_target.h"
#include "sys/clock.h"

namespace bonsai::ctl {

bool sv_timed_args(const SvSyscall& sc, const __u64 a[6], SvTimedArgs& out) noexcept {
  out = SvTimedArgs{};
  out.fd = static_cast<int>(a[0]);
  out.addr = a[1];
  switch (sc.nr) {
    case SYS_pread64:
      out.count = a[2];
      out.off = static_cast<int64_t>(a[3]);
      break;
    case SYS_preadv:
    case SYS_preadv2:
      if (a[2] == 0 || a[2] > kSvTimedMaxIov) return false;  // the kernel's answer
      out.iovcnt = static_cast<uint32_t>(a[2]);
      out.off = static_cast<int64_t>(a[3]);  // x86_64: pos_l holds the whole offset
      if (sc.nr == SYS_preadv2) out.rwf = static_cast<int>(a[5]);
      break;
    default:
      return false;  // read, readv: at the file position (see sv_protect.h)
  }
  // A negative offset: EINVAL, or preadv2's -1, the file position: the kernel's.
  if (out.fd < 0 || out.off < 0) return false;
  out.nr = sc.nr;
  return true;
}

bool sv_timed_kind_ok(unsigned mode) noexcept { return S_ISREG(mode) || S_ISBLK(mode); }

bool sv_timed_direct_ok(const SvSeg* segs, uint32_t n, uint64_t align) noexcept {
  if (!align) return false;
  for (uint32_t i = 0; i < n; ++i)
    if (segs[i].base % align || segs[i].len % align) return false;
  return true;
}

uint32_t sv_timed_cut(SvSeg* segs, uint32_t n, uint64_t moved) noexcept {
  uint32_t k = 0;
  for (; k < n && moved; ++k) {
    if (segs[k].len > moved) segs[k].len = moved;
    moved -= segs[k].len;
  }
  return k;
}

namespace {

// O_DIRECT's memory alignment as the supervisor checks it: a page (the kernel's may be
// smaller; a target aligned only to it goes untimed, never wrongly answered).
constexpr uint64_t kDirectAlign = 4096;

bool buffer_ensure(void*& buf, size_t& buf_len, size_t need) {
  need = (need + 4095) & ~size_t{4095};
  if (need <= buf_len) return true;
  if (buf) ::munmap(buf, buf_len);
  buf = nullptr;
  buf_len = 0;
  void* p = ::mmap(nullptr, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  buf = p;
  buf_len = need;
  return true;
}

// Writes `len` bytes of `buf` into the target's segments. @return true if all of them went.
bool target_write(int tid, const void* buf, size_t len, const SvSeg* segs, uint32_t n) {
  iovec remote[kSvTimedMaxIov];
  for (uint32_t i = 0; i < n; ++i) remote[i] = iovec{reinterpret_cast<void*>(segs[i].base), segs[i].len};
  return sv_mem_writev(tid, buf, len, remote, n);
}

}  // namespace

SvTimedScratch::~SvTimedScratch() {
  if (buf) ::munmap(buf, len);
}

SvTimedOutcome sv_timed_make(SvTimedRead& t, SvTimedScratch& sc, bool nowait) noexcept {
  t.made = false;
  const SvTimedArgs& a = t.args;
  struct stat st;
  if (t.fd_copy < 0 || ::fstat(t.fd_copy, &st) != 0 || !sv_timed_kind_ok(st.st_mode)) return SvTimedOutcome::NotMade;
  int fl = ::fcntl(t.fd_copy, F_GETFL);
  if (fl < 0) return SvTimedOutcome::NotMade;
  // A direct read waits for the device whatever RWF_NOWAIT says: always a worker's.
  if (nowait && (fl & O_DIRECT)) return SvTimedOutcome::Blocks;
  // The target's buffers: one, or its iovecs (read from its memory).
  std::vector<SvSeg>& segs = sc.segs;
  segs.clear();
  uint64_t total = 0;
  if (a.iovcnt) {
    iovec v[64];
    for (uint32_t done = 0; done < a.iovcnt;) {
      uint32_t k = a.iovcnt - done < 64 ? a.iovcnt - done : 64;
      if (!sv_mem_read(t.tid, a.addr + done * sizeof(iovec), v, k * sizeof(iovec))) return SvTimedOutcome::NotMade;
      for (uint32_t i = 0; i < k; ++i) {
        if (__builtin_add_overflow(total, v[i].iov_len, &total) || total > SSIZE_MAX)
          return SvTimedOutcome::NotMade;  // EINVAL: the kernel's to say
        segs.push_back(SvSeg{reinterpret_cast<uint64_t>(v[i].iov_base), v[i].iov_len});
      }
      done += k;
    }
  } else {
    total = a.count;
    segs.push_back(SvSeg{a.addr, a.count});
  }
  if ((fl & O_DIRECT) && !sv_timed_direct_ok(segs.data(), static_cast<uint32_t>(segs.size()), kDirectAlign))
    return SvTimedOutcome::NotMade;
  uint64_t n = total < kSvTimedMax ? total : kSvTimedMax;
  if (!buffer_ensure(sc.buf, sc.len, n ? n : 1)) return SvTimedOutcome::NotMade;
  void* buf = sc.buf;
  // The target's own RWF_NOWAIT: its answer (EAGAIN too) is the call's, wherever it is made.
  bool own_nowait = a.nr == SYS_preadv2 && (a.rwf & RWF_NOWAIT);
  uint64_t t0 = mono_ns();
  ssize_t r;
  if (nowait || a.nr == SYS_preadv2) {
    iovec one{buf, n};
    r = ::preadv2(t.fd_copy, &one, 1, a.off, (a.nr == SYS_preadv2 ? a.rwf : 0) | (nowait ? RWF_NOWAIT : 0));
  } else {
    r = ::pread(t.fd_copy, buf, n, a.off);
  }
  int err = errno;
  uint64_t t1 = mono_ns();
  if (nowait && !own_nowait) {
    // Only a whole answer from the page cache is kept: an error (EAGAIN: the data is not
    // in memory; EOPNOTSUPP: no RWF_NOWAIT here) or a short count before the end of the
    // file (part of it in memory) is undone and left to a worker, without RWF_NOWAIT.
    bool whole = r >= 0 && static_cast<uint64_t>(r) == n;
    if (!whole && r >= 0 && S_ISREG(st.st_mode)) {
      off_t end = static_cast<off_t>(a.off) + r;
      struct stat now;
      whole = end >= 0 && ::fstat(t.fd_copy, &now) == 0 && end >= now.st_size;  // short at the end: the file's answer
    }
    if (!whole) return SvTimedOutcome::Blocks;  // its own offset: nothing to undo
  }
  sc.nsegs = r > 0 ? sv_timed_cut(segs.data(), static_cast<uint32_t>(segs.size()), static_cast<uint64_t>(r)) : 0;
  t.made = true;
  t.r = r < 0 ? -static_cast<int64_t>(err) : r;
  t.ns = t1 > t0 ? t1 - t0 : 1;
  return SvTimedOutcome::Made;
}

bool sv_timed_copy_out(const SvTimedRead& t, const SvTimedScratch& sc) noexcept {
  return t.r <= 0 || target_write(t.tid, sc.buf, static_cast<size_t>(t.r), sc.segs.data(), sc.nsegs);
}

void sv_timed_deliver(SvTimedRead& t, const SvTimedScratch& sc, bool check_valid) noexcept {
  if (check_valid && ::ioctl(t.lfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &t.id) != 0) {
    t.answered = 0;  // interrupted while the read was made: its restart is a new call
    return;
  }
  if (!sv_timed_copy_out(t, sc)) {
    // Not delivered: the kernel makes the call (EFAULT where the target's memory is
    // bad, the same data where only our copy failed).
    t.made = false;
    return;
  }
  t.answered = sv_timed_answer(t) ? 1 : 0;
}

bool sv_timed_answer(const SvTimedRead& t) noexcept {
  seccomp_notif_resp resp{};
  resp.id = t.id;
  resp.val = t.r >= 0 ? t.r : 0;
  resp.error = t.r < 0 ? static_cast<int32_t>(t.r) : 0;
  // ENOENT: interrupted (the call restarts as a new notification) or killed; another
  // error: the listener is gone with its tree.
  return ::ioctl(t.lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0;
}

SvTimedPool::~SvTimedPool() {
  stop();
  if (efd_ >= 0) ::close(efd_);
}

bool SvTimedPool::submit(const SvTimedRead& t) {
  if (stopping_) return false;
  if (efd_ < 0) {
    efd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd_ < 0) return false;
  }
  std::unique_lock lk(mu_);
  if (idle_ == 0 && threads_.size() < kSvTimedWorkers) {
    // Workers take no signals: the loop's thread handles them (SIGBUS of a truncated
    // segment is the loop's; the workers never touch the segment).
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    try {
      threads_.emplace_back([this] { work(); });
    } catch (...) {
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  if (threads_.empty()) return false;
  queue_.push_back(t);
  ++in_flight_;
  lk.unlock();
  cv_.notify_one();
  return true;
}

void SvTimedPool::work() {
  SvTimedScratch scratch;
  std::unique_lock lk(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lk, [this] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) break;  // stopping, nothing left
    SvTimedRead t = queue_.front();
    queue_.pop_front();
    lk.unlock();
    if (sv_timed_make(t, scratch, false) == SvTimedOutcome::Made) {
      std::lock_guard g(mem_mu_);  // see sv_timed_deliver
      sv_timed_deliver(t, scratch, true);
    }
    if (t.made) {
      ::close(t.fd_copy);
      t.fd_copy = -1;
    }
    lk.lock();
    finished_.push_back(t);
    uint64_t one = 1;
    [[maybe_unused]] ssize_t w = ::write(efd_, &one, sizeof one);
  }
}

void SvTimedPool::done(std::vector<SvTimedRead>& out) {
  out.clear();
  if (efd_ < 0) return;
  uint64_t v;
  [[maybe_unused]] ssize_t r = ::read(efd_, &v, sizeof v);
  std::lock_guard lk(mu_);
  out.swap(finished_);
  in_flight_ -= out.size() <= in_flight_ ? out.size() : in_flight_;
}

void SvTimedPool::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& th : threads_)
    if (th.joinable()) th.join();
  threads_.clear();
}

}  // namespace bonsai::ctl
