// SPDX-License-Identifier: MIT
// The host segment, bonsaictl's side (see host_client.h).
#include "segment/host_client.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <memory>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bucket/limits_carry.h"
#include "base/diag.h"
#include "shm/shm_fd.h"
#include "shm/seqlock.h"
#include "shm/shm_check.h"
#include "shm/shm_host.h"
#include "segment/shm_client.h"
#include "sys/clock.h"

namespace bonsai::ctl {
namespace {

// Layout 14 (0.2.0's, the base alone: written in place) or 15 on (a directory after it).
// @return "" or what is wrong.
std::string header_problem(const ShmHost& h, size_t file_size, size_t mapped, const std::string& path) {
  if (const char* p = host_header_problem(h, file_size, mapped)) {
    if (p == kShmNewerLayout)
      return fmt::format("{} was made by a newer bonsai (layout {}; this bonsaictl reads {}..{}): use the bonsaictl "
                         "of that release, or upgrade bonsai",
                         path, h.header.version, kShmOldestLayout, BONSAI_ABI_VERSION);
    return fmt::format("{} {}: remove it and load again", path, p);
  }
  if (h.header.uid != ctl_uid())
    return fmt::format("{} names uid {} in its header, not {}: remove it and load again", path, h.header.uid, ctl_uid());
  return {};
}

// Opens the segment read-write, checked (owner, mode, regular file). -1 if absent.
int host_open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && errno == ENOENT) return -1;
  if (fd < 0) runtime_error(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_uid != ctl_uid() && st.st_uid != shm_uid_here(ctl_uid())) || (st.st_mode & 077)) {
    ::close(fd);
    runtime_error(fmt::format("{} is not a private file of {} (remove it: it is not bonsai's)", path,
                              user_text(ctl_uid())));
  }
  return fd;
}

// Creates it complete under a temporary name and links it into place, as service segments.
int host_create(const std::string& path) {
  std::string tmp = fmt::format("/dev/shm/.bonsai-new.{}.{}", getpid(), unix_now_ns());
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) runtime_error(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
  bool ok = (!ctl_other_user() || fchown(fd, ctl_uid(), ctl_gid()) == 0) && fchmod(fd, 0600) == 0 &&
            ftruncate(fd, kHostMadeSize) == 0;
  void* m = ok ? mmap(nullptr, kHostMadeSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  int e = errno;
  if (m == MAP_FAILED) {
    ::close(fd);
    ::unlink(tmp.c_str());
    runtime_error(fmt::format("cannot make {}: {}", tmp, std::strerror(e)));
  }
  host_header_init(*static_cast<ShmHost*>(m), kHostMadeSize, ctl_uid());
  munmap(m, kHostMadeSize);
  int rc = ::link(tmp.c_str(), path.c_str());
  ::unlink(tmp.c_str());
  if (rc == 0) return fd;
  ::close(fd);
  return host_open(path);  // another bonsaictl was first: use (and check) its segment
}

struct Mapped {
  ShmHost* h = nullptr;
  size_t len = 0;
  int fd = -1;
  ~Mapped() {
    if (h) munmap(h, len);
    if (fd >= 0) ::close(fd);
  }
};

bool host_map(Mapped& m, bool create) {
  std::string path = host_path();
  m.fd = host_open(path);
  if (m.fd < 0 && create) m.fd = host_create(path);
  if (m.fd < 0) return false;
  struct stat st;
  if (fstat(m.fd, &st) != 0 || static_cast<size_t>(st.st_size) < sizeof(ShmHost)) {
    if (!create) return false;
    runtime_error(fmt::format("{} is truncated: remove it and load again", path));
  }
  const size_t len = shm_map_size(static_cast<size_t>(st.st_size), sizeof(ShmHost));
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, m.fd, 0);
  if (p == MAP_FAILED) runtime_error(fmt::format("cannot map {}: {}", path, std::strerror(errno)));
  m.h = static_cast<ShmHost*>(p);
  m.len = len;
  if (std::string problem = header_problem(*m.h, static_cast<size_t>(st.st_size), len, path); !problem.empty()) {
    if (!create) return false;
    runtime_error(problem);
  }
  return true;
}

}  // namespace

std::string host_path() {
  char buf[256];
  if (!shm_host_path(buf, sizeof buf, shm_prefix().c_str(), ctl_uid())) usage_error("host segment name too long");
  return buf;
}

void host_install(const LimitSet& capacity) {
  Mapped m;
  host_map(m, true);
  auto prev = std::make_unique<LimitsView>();
  auto next = std::make_unique<LimitsView>();
  if (!limits_view_build(capacity, *next)) runtime_error("the host capacity puts one call in two rules");
  LimitSet old{};
  uint64_t seq = 0;
  if (!seqlock_read(m.h->capacity, old, seq, 1000) || limits_problem(old) || !limits_view_build(old, *prev))
    *prev = LimitsView{};
  buckets_carry(*prev, m.h->buckets, *next, m.h->buckets, mono_ns());
  seqlock_write(m.h->capacity, capacity, unix_now_ns());
  m.h->header.changed_unix_ns.store(unix_now_ns(), std::memory_order_relaxed);
}

bool host_read(LimitSet& out) {
  Mapped m;
  uint64_t seq;
  if (!host_map(m, false)) return false;
  return seqlock_read(m.h->capacity, out, seq, 1000) && !limits_problem(out);
}

unsigned host_resolve(LimitSet& set) {
  LimitSet cap{};
  if (!host_read(cap)) cap = LimitSet{};
  shares_resolve(set, cap);
  unsigned orphans = 0;
  for (uint32_t r = 0; r < set.count && r < kMaxRules; ++r)
    if (rule_ceil_above(set.rules[r]) && !set.rules[r].host1) ++orphans;
  return orphans;
}

}  // namespace bonsai::ctl
