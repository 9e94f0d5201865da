// SPDX-License-Identifier: MIT
// Service segments from bonsaictl's side (see shm_client.h).
#include "shm_client.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "shm/seqlock.h"
#include "shm/shm_check.h"
#include "shm/shm_name.h"
#include "shm/shm_slots.h"

namespace bonsai::ctl {

std::string shm_prefix() {
  const char* p = std::getenv("BONSAI_SHM_PREFIX");
  std::string prefix = p ? p : "";
  if (!shm_prefix_valid(prefix)) usage_error(fmt::format("BONSAI_SHM_PREFIX '{}' is not valid (A-Z a-z 0-9 _ . -)", prefix));
  return prefix;
}

unsigned ctl_uid() { return static_cast<unsigned>(geteuid()); }

uint64_t unix_now_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

std::string segment_path(const std::string& service) {
  if (!shm_service_name_valid(service))
    usage_error(fmt::format("bad service name '{}' (1-63 of A-Z a-z 0-9 _ . -, not starting with . or -)", service));
  char buf[256];
  if (!shm_segment_path(buf, sizeof buf, shm_prefix(), ctl_uid(), service)) usage_error("segment name too long");
  return buf;
}

std::string segment_owner_problem(unsigned file_uid, unsigned file_mode, unsigned me) {
  if (file_uid != me && me != 0)
    return fmt::format("belongs to uid {} (you are uid {}); refusing to touch another user's segment", file_uid, me);
  if (file_mode & 077) return fmt::format("has mode {:04o}, not 0600; refusing a segment others can open", file_mode & 07777);
  return {};
}

namespace {

// Creates the segment complete (sized, header written) under a temporary name and
// links it into place, so that no reader ever sees it half made. @return false if
// another bonsaictl created it first.
bool segment_create(const std::string& path, const std::string& service, ShmScope scope) {
  std::string tmp = fmt::format("/dev/shm/.bonsai-new.{}.{}", getpid(), unix_now_ns());
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) runtime_error(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
  void* m = MAP_FAILED;
  if (fchmod(fd, 0600) == 0 && ftruncate(fd, sizeof(ShmSegment)) == 0)
    m = mmap(nullptr, sizeof(ShmSegment), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  ::close(fd);
  if (m == MAP_FAILED) {
    ::unlink(tmp.c_str());
    runtime_error(fmt::format("cannot size {}: {}", tmp, std::strerror(e)));
  }
  shm_header_init(*static_cast<ShmSegment*>(m), scope, ctl_uid(), service.c_str(), unix_now_ns());
  munmap(m, sizeof(ShmSegment));
  int rc = ::link(tmp.c_str(), path.c_str());
  e = errno;
  ::unlink(tmp.c_str());
  if (rc != 0 && e != EEXIST) runtime_error(fmt::format("cannot create {}: {}", path, std::strerror(e)));
  return rc == 0;
}

}  // namespace

std::unique_ptr<Segment> Segment::open(const std::string& service, bool create, ShmScope scope) {
  std::string path = segment_path(service);
  bool created = false;
  int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create) {
    created = segment_create(path, service, scope);
    fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0) {
    if (errno == ENOENT) runtime_error(fmt::format("no service '{}' ({} does not exist; see bonsaictl ls)", service, path));
    runtime_error(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    runtime_error(fmt::format("cannot stat {}", path));
  }
  if (std::string p = segment_owner_problem(st.st_uid, st.st_mode, ctl_uid()); !p.empty()) {
    ::close(fd);
    runtime_error(fmt::format("{} {}", path, p));
  }
  void* m = MAP_FAILED;
  if (static_cast<size_t>(st.st_size) >= sizeof(ShmHeader))
    m = mmap(nullptr, sizeof(ShmSegment), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED)
    runtime_error(fmt::format("{} is truncated or unreadable (remove it with bonsaictl rm --force {})", path, service));
  auto* seg = static_cast<ShmSegment*>(m);
  if (const char* problem = shm_header_problem(*seg, static_cast<size_t>(st.st_size))) {
    munmap(m, sizeof(ShmSegment));
    runtime_error(fmt::format("{}: {} (remove it with bonsaictl rm --force {})", path, problem, service));
  }
  return std::unique_ptr<Segment>(new Segment(service, seg, created));
}

Segment::~Segment() { munmap(seg_, sizeof(ShmSegment)); }

uint64_t Segment::write_limits(const LimitSet& set) {
  uint64_t seq = seqlock_write(seg_->limits, set, unix_now_ns());
  if (seg_->header.scope.load(std::memory_order_relaxed) == static_cast<uint32_t>(ShmScope::Service))
    for (auto& b : seg_->buckets) b.tat_ns.store(0, std::memory_order_relaxed);
  return seq;
}

void Segment::set_scope(ShmScope scope) { seg_->header.scope.store(static_cast<uint32_t>(scope), std::memory_order_relaxed); }

unsigned Segment::live_processes() {
  slots_reclaim_dead(*seg_);
  unsigned n = 0;
  for (const auto& s : seg_->slots)
    if (s.state.load(std::memory_order_acquire) == static_cast<uint32_t>(SlotState::Live)) ++n;
  return n;
}

std::vector<std::string> services_list() {
  std::vector<std::string> out;
  std::string prefix = shm_prefix();
  DIR* d = opendir("/dev/shm");
  if (!d) runtime_error("cannot list /dev/shm");
  while (dirent* e = readdir(d)) {
    std::string_view s = shm_service_of_file(e->d_name, prefix, ctl_uid());
    if (!s.empty()) out.emplace_back(s);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

void segment_remove(const std::string& service) {
  std::string path = segment_path(service);
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) runtime_error(fmt::format("no service '{}' ({} does not exist)", service, path));
  if (st.st_uid != ctl_uid() && ctl_uid() != 0)
    runtime_error(fmt::format("{} belongs to uid {} (you are uid {}); refusing to remove it", path, st.st_uid, ctl_uid()));
  if (::unlink(path.c_str()) != 0) runtime_error(fmt::format("cannot remove {}: {}", path, std::strerror(errno)));
}

}  // namespace bonsai::ctl
