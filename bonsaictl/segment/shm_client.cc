// SPDX-License-Identifier: MIT
// Service segments from bonsaictl's side (see shm_client.h).
#include "segment/shm_client.h"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <memory>
#include <fmt/core.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bucket/limits_carry.h"
#include "base/diag.h"
#include "segment/proc_table.h"
#include "shm/seqlock.h"
#include "shm/shm_check.h"
#include "shm/shm_fd.h"
#include "shm/shm_guard.h"
#include "shm/shm_name.h"
#include "shm/shm_slots.h"
#include "sys/clock.h"

namespace bonsai::ctl {

std::string shm_prefix() {
  const char* p = std::getenv("BONSAI_SHM_PREFIX");
  std::string prefix = p ? p : "";
  if (!shm_prefix_valid(prefix)) usage_error(fmt::format("BONSAI_SHM_PREFIX '{}' is not valid (A-Z a-z 0-9 _ . -)", prefix));
  return prefix;
}

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

std::string segment_owner_problem(unsigned file_uid, unsigned file_mode, unsigned me, const std::string& path,
                                  const std::string& service) {
  // In a user namespace (a rootless container, docs/reference/containers.md) the owner shows as the uid it maps to.
  if (file_uid != me && file_uid != shm_uid_here(me)) {
    std::string how = path.empty() ? "" : fmt::format(": rm {}", path);
    if (me == 0 && !service.empty()) how += fmt::format(" (or bonsaictl rm --force {})", service);
    return fmt::format(
        "belongs to {}, not to you (uid {}); another user created this service's name, so bonsaictl will not use "
        "it. To clear it, its owner or root removes it{}",
        user_text(file_uid), me, how);
  }
  if (file_mode & 077)
    return fmt::format("has mode {:04o}, not 0600; refusing a segment others can open (remove it with bonsaictl rm --force {})",
                       file_mode & 07777, service.empty() ? "SERVICE" : service);
  return {};
}

std::string damage_message(const std::string& service, const std::string& path, const std::string& what) {
  return fmt::format(
      "{} is damaged: {}. To recover: bonsaictl rm --force {}, then bonsaictl load FILE (or bonsaictl run) again; "
      "processes attached to it keep their current limits until restarted",
      path, what, service);
}

namespace {

constexpr int kOpenFlags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
constexpr int64_t kPidMax = 4194304;  // PID_MAX_LIMIT on 64-bit Linux

// Creates the segment complete (sized, header written) under a temporary name made
// with O_EXCL and links it into place (link() never replaces an existing name), so
// no reader sees it half made. @return the open file if we created it (`created`),
// else the name's existing file opened (another bonsaictl, or another user, was
// first: the caller's owner checks decide), or -1 with errno.
int segment_create(const std::string& path, const std::string& service, ShmScope scope, bool& created) {
  created = false;
  std::string tmp = fmt::format("/dev/shm/.bonsai-new.{}.{}", getpid(), unix_now_ns());
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) runtime_error(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
  void* m = MAP_FAILED;
  struct stat st;
  if (ctl_other_user() && fchown(fd, ctl_uid(), ctl_gid()) != 0) {  // root, for another user (--user)
    int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    runtime_error(fmt::format("cannot give {} to {}: {}", tmp, user_text(ctl_uid()), std::strerror(e)));
  }
  if (fstat(fd, &st) == 0 && st.st_uid == ctl_uid() && S_ISREG(st.st_mode) && fchmod(fd, 0600) == 0 &&
      ftruncate(fd, kShmMadeSize) == 0)
    m = mmap(nullptr, kShmMadeSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  if (m == MAP_FAILED) {
    ::close(fd);
    ::unlink(tmp.c_str());
    runtime_error(fmt::format("cannot size {}: {}", tmp, std::strerror(e)));
  }
  shm_header_init(*static_cast<ShmSegment*>(m), kShmMadeSize, scope, ctl_uid(), service.c_str(), unix_now_ns());
  munmap(m, kShmMadeSize);
  int rc = ::link(tmp.c_str(), path.c_str());
  e = errno;
  ::unlink(tmp.c_str());
  if (rc == 0) {
    created = true;
    return fd;
  }
  ::close(fd);
  if (e != EEXIST) runtime_error(fmt::format("cannot create {}: {}", path, std::strerror(e)));
  return ::open(path.c_str(), kOpenFlags);
}

// Everything bonsaictl relies on besides the limits: header, owner recorded in it,
// high-water mark, slot states and pids. @return "" or what is wrong.
std::string segment_problem(const ShmSegment& seg, size_t file_size, size_t mapped) {
  if (const char* p = shm_header_problem(seg, file_size, mapped)) return p;
  if (seg.header.uid != ctl_uid()) return fmt::format("its header names uid {}, not its owner {}", seg.header.uid, ctl_uid());
  uint32_t used = seg.exited.slots_used.load(std::memory_order_relaxed);
  if (used > kMaxSlots) return fmt::format("its slot high-water mark is {} (there are {} slots)", used, kMaxSlots);
  for (unsigned i = 0; i < used; ++i) {
    const ShmSlot& slot = seg.slots[i];
    uint32_t state = slot.state.load(std::memory_order_acquire);
    if (state > static_cast<uint32_t>(SlotState::Folding)) return fmt::format("slot {} has an unknown state {}", i, state);
    if (state != static_cast<uint32_t>(SlotState::Live)) continue;
    int32_t pid = slot.pid.load(std::memory_order_relaxed);
    if (pid > 0 && pid <= kPidMax) continue;
    // A slot being released right now reads pid 0 after the state moved on: look again.
    if (slot.state.load(std::memory_order_acquire) == state && slot.pid.load(std::memory_order_relaxed) == pid)
      return fmt::format("slot {} holds a live process with pid {}", i, pid);
  }
  return {};
}

}  // namespace

std::string newer_layout_message(const std::string& path, uint32_t version, const std::string& service) {
  return fmt::format("{} was made by a newer bonsai (segment layout {}; this bonsaictl reads {}..{}): use the "
                     "bonsaictl of that release, or upgrade bonsai; the service's processes keep their limits. If no "
                     "newer bonsai runs here, the segment is damaged: bonsaictl rm --force {}, then load it again",
                     path, version, kShmOldestLayout, BONSAI_ABI_VERSION, service);
}

std::unique_ptr<Segment> Segment::open(const std::string& service, bool create, ShmScope scope) {
  std::string path = segment_path(service);
  bool created = false;
  int fd = ::open(path.c_str(), kOpenFlags);
  if (fd < 0 && errno == ENOENT && create) fd = segment_create(path, service, scope, created);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) runtime_error(fmt::format("no service '{}' ({} does not exist; see bonsaictl ls)", service, path));
    struct stat lst;
    if (lstat(path.c_str(), &lst) == 0) {
      if (S_ISLNK(lst.st_mode))
        runtime_error(fmt::format("{} is a symbolic link (made by {}); refusing it. To clear it, its owner or root "
                                  "removes it: rm {}",
                                  path, user_text(lst.st_uid), path));
      if (lst.st_uid != ctl_uid())
        runtime_error(fmt::format("{} {}", path, segment_owner_problem(lst.st_uid, lst.st_mode, ctl_uid(), path, service)));
    }
    runtime_error(fmt::format("cannot open {}: {}", path, std::strerror(e)));
  }
  return from_fd(service, path, fd, created);
}

std::unique_ptr<Segment> Segment::adopt(const std::string& service, int fd) {
  std::string path = segment_path(service);
  struct stat by_name, by_fd;
  if (stat(path.c_str(), &by_name) != 0 || fstat(fd, &by_fd) != 0 || by_name.st_dev != by_fd.st_dev ||
      by_name.st_ino != by_fd.st_ino) {
    ::close(fd);
    runtime_error(fmt::format("the inherited descriptor is not {}", path));
  }
  return from_fd(service, path, fd, false);
}

std::unique_ptr<Segment> Segment::from_fd(const std::string& service, const std::string& path, int fd, bool created) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    runtime_error(fmt::format("cannot stat {}: {}", path, std::strerror(e)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    runtime_error(fmt::format("{} is not a regular file (made by {}); refusing it. To clear it, its owner or root "
                              "removes it: rm {}",
                              path, user_text(st.st_uid), path));
  }
  if (std::string p = segment_owner_problem(st.st_uid, st.st_mode, ctl_uid(), path, service); !p.empty()) {
    ::close(fd);
    runtime_error(fmt::format("{} {}", path, p));
  }
  if (static_cast<uint64_t>(st.st_size) < sizeof(ShmSegment)) {
    std::string what = fmt::format("the file is {} bytes, a segment has {} (truncated)", st.st_size, sizeof(ShmSegment));
    // A segment of another layout version (an older or newer bonsai) has another size:
    // say that, not "truncated".
    uint64_t magic = 0;
    uint32_t version = 0;
    if (pread(fd, &magic, sizeof magic, offsetof(ShmHeader, magic)) == sizeof magic && magic == kShmMagic &&
        pread(fd, &version, sizeof version, offsetof(ShmHeader, version)) == sizeof version &&
        version != BONSAI_ABI_VERSION)
      what = fmt::format("it was made by another version of bonsai (segment layout {}; this bonsaictl's is {})",
                         version, BONSAI_ABI_VERSION);
    ::close(fd);
    runtime_error(damage_message(service, path, what));
  }
  // Layout 14 is the base alone; 15 on add a directory and sections after it (bounded).
  const size_t map_len = shm_map_size(static_cast<size_t>(st.st_size), sizeof(ShmSegment));
  void* m = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    int e = errno;
    ::close(fd);
    runtime_error(fmt::format("cannot map {}: {}", path, std::strerror(e)));
  }
  std::unique_ptr<Segment> s(
      new Segment(service, path, static_cast<ShmSegment*>(m), map_len, fd, created, st.st_dev, st.st_ino));
  const char* problem = nullptr;
  uint32_t version = 0;
  s->guarded([&] {
    problem = shm_header_problem(*s->seg_, static_cast<size_t>(st.st_size), map_len, &s->sections_);
    version = s->seg_->header.version;
  });
  if (problem == kShmNewerLayout) runtime_error(newer_layout_message(path, version, service));
  if (problem) s->damaged(problem);
  s->layout_ = version;
  return s;
}

Segment::~Segment() {
  munmap(seg_, map_len_);
  ::close(fd_);
}

void Segment::damaged(const std::string& what) const { runtime_error(damage_message(service_, path_, what)); }

void Segment::guard_begin() {
  if (lost_) damaged("the file was truncated while bonsaictl read it");
  guarded_ = shm_guard_register(seg_, map_len_);
}

void Segment::guard_abort() noexcept {
  if (guarded_ && shm_guard_lost(seg_)) lost_ = true;
  if (guarded_) shm_guard_unregister(seg_);
  guarded_ = false;
}

void Segment::guard_end() {
  guard_abort();
  if (lost_) damaged("the file was truncated while bonsaictl read it");
}

void Segment::check() {
  struct stat st;
  if (fstat(fd_, &st) != 0) damaged(fmt::format("cannot stat it: {}", std::strerror(errno)));
  if (static_cast<uint64_t>(st.st_size) < sizeof(ShmSegment))
    damaged(fmt::format("the file is {} bytes, a segment has {} (truncated)", st.st_size, sizeof(ShmSegment)));
  std::string problem;
  guarded([&] { problem = segment_problem(*seg_, static_cast<size_t>(st.st_size), map_len_); });
  if (!problem.empty()) damaged(problem);
}

FileState Segment::file_state() const {
  struct stat st;
  if (lstat(path_.c_str(), &st) != 0) return errno == ENOENT ? FileState::Removed : FileState::Same;
  return st.st_dev == dev_ && st.st_ino == ino_ ? FileState::Same : FileState::Replaced;
}

uint64_t Segment::write_limits(const LimitSet& set) {
  uint64_t seq = 0;
  // The service's buckets keep their state across the change (bucket/limits_carry.h):
  // a `set` of the same limits changes nothing, a new rate carries debt and credit.
  // Limits in the segment that do not build (damaged, or written by an older ABI) are
  // no limits: every rule then starts as a fresh bucket.
  auto prev = std::make_unique<LimitsView>();
  auto next = std::make_unique<LimitsView>();
  if (!limits_view_build(set, *next)) runtime_error("the limits put one call in two rules");
  guarded([&] {
    LimitSet old{};
    uint64_t old_seq = 0;
    if (!seqlock_read(seg_->limits, old, old_seq, 1000) || limits_problem(old) || !limits_view_build(old, *prev))
      *prev = LimitsView{};
    if (seg_->header.scope.load(std::memory_order_relaxed) == static_cast<uint32_t>(ShmScope::Service))
      buckets_carry(*prev, seg_->buckets, *next, seg_->buckets, mono_ns());
    seq = seqlock_write(seg_->limits, set, unix_now_ns());
  });
  return seq;
}

void Segment::set_scope(ShmScope scope) {
  guarded([&] { seg_->header.scope.store(static_cast<uint32_t>(scope), std::memory_order_relaxed); });
}

unsigned Segment::live_processes() {
  check();
  unsigned n = 0;
  ProcTable procs;  // containers' processes too (docs/reference/containers.md), one pass for every slot
  guarded([&] {
    slots_reclaim(*seg_, procs.slot_judge());
    unsigned end = slots_scan_end(*seg_);
    for (unsigned i = 0; i < end; ++i)
      if (seg_->slots[i].state.load(std::memory_order_acquire) == static_cast<uint32_t>(SlotState::Live)) ++n;
  });
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

std::vector<std::pair<unsigned, std::string>> services_list_all_users() {
  std::vector<std::pair<unsigned, std::string>> out;
  std::string head = shm_prefix() + "bonsai.";
  DIR* d = opendir("/dev/shm");
  if (!d) runtime_error("cannot list /dev/shm");
  while (dirent* e = readdir(d)) {
    std::string_view name = e->d_name;
    if (name.substr(0, head.size()) != head) continue;
    std::string_view rest = name.substr(head.size());
    size_t dot = rest.find('.');
    if (dot == 0 || dot == std::string_view::npos || dot > 10) continue;
    std::string digits(rest.substr(0, dot));
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    unsigned long uid = std::strtoul(digits.c_str(), nullptr, 10);
    if (uid > 0xfffffffeul) continue;
    std::string_view s = shm_service_of_file(name, shm_prefix(), static_cast<unsigned>(uid));
    if (!s.empty()) out.emplace_back(static_cast<unsigned>(uid), std::string(s));
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

void segment_remove(const std::string& service, bool force) {
  std::string path = segment_path(service);
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) runtime_error(fmt::format("no service '{}' ({} does not exist)", service, path));
  bool foreign = st.st_uid != ctl_uid();
  if (foreign && !force)
    runtime_error(fmt::format("{} {}", path, segment_owner_problem(st.st_uid, st.st_mode, ctl_uid(), path, service)));
  if (::unlink(path.c_str()) != 0) {
    int e = errno;
    if (foreign && (e == EPERM || e == EACCES))
      runtime_error(fmt::format("cannot remove {}: it belongs to {}; ask its owner or root to remove it", path,
                                user_text(st.st_uid)));
    runtime_error(fmt::format("cannot remove {}: {}", path, std::strerror(e)));
  }
}

}  // namespace bonsai::ctl
