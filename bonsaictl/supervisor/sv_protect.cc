// SPDX-License-Identifier: MIT
// Protected reads made and timed by the supervisor (see sv_protect.h).
#include "supervisor/sv_protect.h"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <pthread.h>
#include <sys/eventfd.h>
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
    case SYS_read:
      out.count = a[2];
      break;
    case SYS_pread64:
      out.count = a[2];
      out.off = static_cast<int64_t>(a[3]);
      if (out.off < 0) return false;  // EINVAL: the kernel says so
      break;
    case SYS_readv:
    case SYS_preadv:
    case SYS_preadv2:
      if (a[2] == 0 || a[2] > kSvTimedMaxIov) return false;
      out.iovcnt = static_cast<uint32_t>(a[2]);
      if (sc.nr != SYS_readv) {
        out.off = static_cast<int64_t>(a[3]);  // x86_64: pos_l holds the whole offset
        if (out.off < -1 || (out.off == -1 && sc.nr == SYS_preadv)) return false;
      }
      if (sc.nr == SYS_preadv2) out.rwf = static_cast<int>(a[5]);
      break;
    default:
      return false;
  }
  if (out.fd < 0) return false;
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

void sv_timed_make(SvTimedRead& t, std::vector<SvSeg>& segs, void*& buf, size_t& buf_len) noexcept {
  t.made = false;
  const SvTimedArgs& a = t.args;
  struct stat st;
  if (t.fd_copy < 0 || ::fstat(t.fd_copy, &st) != 0 || !sv_timed_kind_ok(st.st_mode)) return;
  int fl = ::fcntl(t.fd_copy, F_GETFL);
  if (fl < 0) return;
  // The target's buffers: one, or its iovecs (read from its memory).
  segs.clear();
  uint64_t total = 0;
  if (a.iovcnt) {
    iovec v[64];
    for (uint32_t done = 0; done < a.iovcnt;) {
      uint32_t k = a.iovcnt - done < 64 ? a.iovcnt - done : 64;
      if (!sv_mem_read(t.tid, a.addr + done * sizeof(iovec), v, k * sizeof(iovec))) return;
      for (uint32_t i = 0; i < k; ++i) {
        if (__builtin_add_overflow(total, v[i].iov_len, &total) || total > SSIZE_MAX) return;  // EINVAL: the kernel's
        segs.push_back(SvSeg{reinterpret_cast<uint64_t>(v[i].iov_base), v[i].iov_len});
      }
      done += k;
    }
  } else {
    total = a.count;
    segs.push_back(SvSeg{a.addr, a.count});
  }
  if ((fl & O_DIRECT) && !sv_timed_direct_ok(segs.data(), static_cast<uint32_t>(segs.size()), kDirectAlign)) return;
  uint64_t n = total < kSvTimedMax ? total : kSvTimedMax;
  if (!buffer_ensure(buf, buf_len, n ? n : 1)) return;
  bool at_position = a.off < 0;  // read, readv, preadv2 at -1: the shared file position moves
  uint64_t t0 = mono_ns();
  ssize_t r;
  switch (a.nr) {
    case SYS_read:
    case SYS_readv: r = ::read(t.fd_copy, buf, n); break;
    case SYS_pread64:
    case SYS_preadv: r = ::pread(t.fd_copy, buf, n, a.off); break;
    case SYS_preadv2: {
      iovec one{buf, n};
      r = ::preadv2(t.fd_copy, &one, 1, a.off, a.rwf);
      break;
    }
    default: return;
  }
  int err = errno;
  uint64_t t1 = mono_ns();
  if (r > 0) {
    uint32_t k = sv_timed_cut(segs.data(), static_cast<uint32_t>(segs.size()), static_cast<uint64_t>(r));
    if (!target_write(t.tid, buf, static_cast<size_t>(r), segs.data(), k)) {
      // Not delivered: the position goes back, and the kernel makes the call (EFAULT
      // where the target's memory is bad, the same data where only our copy failed).
      if (at_position) ::lseek(t.fd_copy, -static_cast<off_t>(r), SEEK_CUR);
      return;
    }
  }
  t.made = true;
  t.r = r < 0 ? -static_cast<int64_t>(err) : r;
  t.ns = t1 > t0 ? t1 - t0 : 1;
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
  std::vector<SvSeg> segs;
  segs.reserve(64);
  void* buf = nullptr;
  size_t buf_len = 0;
  std::unique_lock lk(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lk, [this] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) break;  // stopping, nothing left
    SvTimedRead t = queue_.front();
    queue_.pop_front();
    lk.unlock();
    sv_timed_make(t, segs, buf, buf_len);  // the copy stays open: the loop may have to move its position back
    lk.lock();
    finished_.push_back(t);
    uint64_t one = 1;
    [[maybe_unused]] ssize_t w = ::write(efd_, &one, sizeof one);
  }
  if (buf) ::munmap(buf, buf_len);
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
