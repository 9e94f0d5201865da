// SPDX-License-Identifier: MIT
// Attaching the host process to its service segment (see shm_attach.h). Everything
// in the segment is checked before use; on anything wrong the caller runs unlimited.
#include "shm/shm_attach.h"

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "abi/sv_join.h"
#include "shm/seqlock.h"
#include "shm/shm_fd.h"
#include "shm/shm_check.h"
#include "shm/shm_guard.h"
#include "shm/shm_name.h"
#include "shm/shm_proc.h"
#include "shm/shm_slots.h"
#include "sys/raw_open.h"
#include "sys/raw_stat.h"
#include "sys/startup.h"
#include "sys/raw_syscall.h"

namespace bonsai {
namespace {

BONSAI_STARTUP_DATA constinit ShmSegment* g_seg = nullptr;  // read at every exit
constinit ShmSlot* g_slot = nullptr;
// The process whose slot g_slot is (or who found none), its start time and the slots'
// epoch its claim saw: handed to a fork child and across an exec (SlotKnown).
constinit int g_claim_pid = 0;
constinit uint64_t g_claim_start = 0;
constinit uint64_t g_claim_epoch = 0;
constinit std::atomic<uint64_t> g_installed_seq{0};
constinit bool g_fork_unclaimed = false;  // a forked child that has not claimed its slot yet
constexpr int kReadTries = 1000;

// A system call, not the vDSO: a start that reads no other clock would fault in three
// pages (libc's clock_gettime, vvar and vclock) for this one reading, ~10 us each on a VM.
uint64_t unix_ns() {
  timespec ts{};
  raw_syscall3(SYS_clock_gettime, CLOCK_REALTIME, reinterpret_cast<long>(&ts), 0);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

bool fail(char* why, size_t cap, const char* fmt, const char* a, const char* b = "") {
  std::snprintf(why, cap, fmt, a, b);
  return false;
}

// One unsigned decimal up to `stop` (or the end). @return false if there is none.
bool hint_number(const char*& p, char stop, uint64_t& v) {
  if (*p < '0' || *p > '9') return false;
  v = 0;
  for (int n = 0; *p >= '0' && *p <= '9'; ++p, ++n) {
    if (n == 19) return false;
    v = v * 10 + static_cast<uint64_t>(*p - '0');
  }
  if (*p != stop) return false;
  if (stop) ++p;
  return true;
}

// `forked`: a fork child (a new pid: no slot names it unless one was claimed since the
// parent's claim); else a start or an exec (`hint`: BONSAI_SLOT, if it names this process).
ShmSlot* claim_for(int pid, uint64_t seen_seq, bool forked, const char* hint = nullptr) {
  uint64_t start;
  const bool parent_claimed = g_claim_pid != 0;  // in a fork child: the parent's claim
  g_claim_pid = 0;  // no hint to hand down until this claim is done
  // /proc/self: our pid may be another pid namespace's than /proc's.
  if (proc_status_self(start) != ProcStatus::Alive) return nullptr;
  char comm[16] = {};
  // Our own name without /proc (a start of every service member pays for this).
  if (prctl(PR_GET_NAME, comm) != 0) proc_comm(pid, comm, sizeof comm);
  comm[sizeof comm - 1] = '\0';
  SlotKnown known{};
  SlotKnown* kp = nullptr;
  if (forked && parent_claimed) {
    known.none = true;
    known.epoch = g_claim_epoch;
    kp = &known;
  } else if (uint64_t h[4]; hint && hint_number(hint, ':', h[0]) && hint_number(hint, ':', h[1]) &&
                                hint_number(hint, ':', h[2]) && hint_number(hint, '\0', h[3]) &&
                                h[0] == static_cast<uint64_t>(pid) && (h[1] == start || (h[1] == 0 && h[2] >= kMaxSlots))) {
    known.index = h[2] < kMaxSlots ? static_cast<unsigned>(h[2]) : kMaxSlots;
    known.none = known.index == kMaxSlots;
    known.epoch = h[3];
    kp = &known;
  }
  SlotKnown out{};
  if (!kp) kp = &out;
  ShmSlot* slot = slot_claim(*g_seg, pid, start, comm, seen_seq, unix_ns(), shm_kept_fd(), kp);
  g_claim_start = start;
  g_claim_epoch = kp->epoch;
  g_claim_pid = pid;
  return slot;
}

size_t put_number(char* out, uint64_t v) {
  char digits[24];
  size_t d = 0;
  do digits[d++] = static_cast<char>('0' + v % 10); while (v /= 10);
  for (size_t k = 0; k < d; ++k) out[k] = digits[d - 1 - k];
  return d;
}

// Is this process in a user namespace other than the initial one (its uid_map is not the
// identity "0 0 4294967295")? Raw reads: the attach path runs in the constructor.
bool in_user_namespace() {
  long fd = raw_open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return false;
  char buf[128];
  long n = raw_syscall3(SYS_read, fd, reinterpret_cast<long>(buf), sizeof buf - 1);
  raw_close(static_cast<int>(fd));
  if (n <= 0) return false;
  buf[n] = '\0';
  unsigned long v[3] = {1, 1, 0};
  const char* p = buf;
  for (auto& x : v) {
    while (*p == ' ') ++p;
    if (*p < '0' || *p > '9') return true;
    x = 0;
    while (*p >= '0' && *p <= '9') x = x * 10 + static_cast<unsigned long>(*p++ - '0');
  }
  while (*p == ' ' || *p == '\n') ++p;
  return !(v[0] == 0 && v[1] == 0 && v[2] == 4294967295ul && *p == '\0');
}

}  // namespace

namespace {
// What shm_open_service found, for shm_map_service: the descriptor it kept, its size.
constinit size_t g_open_size = 0;
constinit char g_open_service[kServiceNameMax + 1] = {};
constinit char g_open_path[256] = {};
}  // namespace

bool shm_open_service(const char* service, const char* prefix, char* why, size_t cap) noexcept {
  char path[256];
  char none = '\0';  // no prefix: not a "" in .rodata (a page a start touches nowhere else)
  if (!prefix) prefix = &none;
  if (!shm_prefix_valid(prefix)) return fail(why, cap, "BONSAI_SHM_PREFIX '%s' is not a valid name", prefix);
  // The segment's owner: BONSAI_SHM_UID (set by bonsaictl run, so a child that
  // changed uid still looks for the same segment), else the effective uid.
  unsigned uid = shm_owner_uid();
  if (!shm_segment_path(path, sizeof path, prefix, uid, service))
    return fail(why, cap, "BONSAI_SERVICE '%s' is not a valid service name", service);
  // An inherited descriptor (BONSAI_SHM_FD) needs no lookup by name or permission
  // check after a uid change; it is used only if it is that very segment.
  long fd = shm_inherited_fd(path, uid);
  if (fd < 0) fd = raw_open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd < 0 && in_user_namespace())  // a rootless container of another user than the service's owner
    return fail(why, cap, "service '%s': cannot open %s from this user namespace (a rootless container joins "
                "only a service of the user it runs as: docs/reference/containers.md)", service, path);
  if (fd == -EACCES || fd == -EPERM) {  // the segment is there; this uid may not open it
    struct stat own;
    unsigned owner = raw_fstatat(AT_FDCWD, path, own, AT_SYMLINK_NOFOLLOW) == 0 ? own.st_uid : uid;
    long me = raw_syscall3(SYS_geteuid, 0, 0, 0);
    std::snprintf(why, cap, "service '%s': cannot open %s: permission denied (the segment belongs to uid %u, this "
                  "process runs as uid %ld: run it as the segment's user; docs/reference/containers.md)", service, path, owner, me);
    return false;
  }
  if (fd < 0)
    return fail(why, cap, "service '%s': cannot open %s (start it with bonsaictl run or load)", service, path);
  struct stat st;
  // In a user namespace (rootless Podman) the host's owner shows as the uid it maps to.
  if (raw_fstat(static_cast<int>(fd), st) != 0 || (st.st_uid != uid && st.st_uid != shm_uid_here(uid)) ||
      (st.st_mode & 077)) {
    raw_close(static_cast<int>(fd));
    // A user namespace (rootless Podman: the host's owner is another uid in here) is
    // refused in so many words (docs/reference/containers.md).
    if (in_user_namespace())
      return fail(why, cap, "service '%s': %s is not owned by the service's uid as this user namespace maps it "
                  "(a rootless container joins only a service of the user it runs as: docs/reference/containers.md)",
                  service, path);
    return fail(why, cap, "service '%s': %s is not private to this user (owner or mode)", service, path);
  }
  auto file_size = static_cast<size_t>(st.st_size);
  if (file_size < sizeof(ShmSegment)) {
    raw_close(static_cast<int>(fd));
    return fail(why, cap, "service '%s': %s is truncated or not a bonsai segment", service, path);
  }
  // Kept from now on (handed down at exec, shm_fd.h): a process that changes uid or
  // closes every descriptor before its first limited call still maps this very file.
  shm_keep_fd(static_cast<int>(fd), st, path);
  g_open_size = file_size;
  size_t i = 0;
  for (; service[i] && i < kServiceNameMax; ++i) g_open_service[i] = service[i];
  g_open_service[i] = '\0';
  for (i = 0; path[i] && i + 1 < sizeof g_open_path; ++i) g_open_path[i] = path[i];
  g_open_path[i] = '\0';
  return true;
}

bool shm_map_service(ShmAttach& out, char* why, size_t cap, const char* slot_hint) noexcept {
  out = ShmAttach{};
  const char* service = g_open_service;
  const char* path = g_open_path;
  const long fd = shm_kept_fd();
  struct stat st;
  // The descriptor kept at start is the segment still (shm_fd.h guards it against close
  // loops); its size is what the checks below are made against.
  if (fd < 0 || raw_fstat(static_cast<int>(fd), st) != 0 || static_cast<size_t>(st.st_size) != g_open_size)
    return fail(why, cap, "service '%s': %s changed or was closed since this process started", service, path);
  const size_t file_size = g_open_size;
  // The base, the directory and the sections a newer bonsai may have added (bounded).
  const size_t map_len = shm_map_size(file_size, sizeof(ShmSegment));
  void* p = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, static_cast<int>(fd), 0);
  if (p == MAP_FAILED) return fail(why, cap, "service '%s': cannot map %s", service, path);
  auto* seg = static_cast<ShmSegment*>(p);
  // From here on a truncation of the file must not kill us (SIGBUS): see shm_guard.h.
  shm_guard_register(p, map_len);
  if (const char* problem = shm_header_problem(*seg, file_size, map_len)) {
    bool said = false;
    uint32_t version = __atomic_load_n(&seg->header.version, __ATOMIC_RELAXED);
    // A newer layout is said once for the whole service: the first process to meet it
    // sets the bit in the base's notices word (frozen at the same place in every layout).
    if (problem == kShmNewerLayout)
      said = seg->exited.notices.fetch_or(kNoticeNewerLayout, std::memory_order_relaxed) & kNoticeNewerLayout;
    const bool lost = shm_guard_lost(p);
    shm_guard_unregister(p);
    munmap(p, map_len);
    if (problem == kShmNewerLayout && !lost) {
      if (said) {
        if (cap) why[0] = '\0';  // said already by another process of the service
        return false;
      }
      std::snprintf(why, cap,
                    "service '%s': %s was made by a newer bonsai (segment layout %u; this library reads %u..%u): "
                    "upgrade bonsai to cap this service's processes (said once for the service)",
                    service, path, version, kShmOldestLayout, BONSAI_ABI_VERSION);
      return false;
    }
    return fail(why, cap, "service '%s': %s", service, problem);
  }
  g_seg = seg;
  out.seq = &seg->limits.seq;
  if (seqlock_read(seg->limits, out.limits, out.limits_seq, kReadTries)) {
    out.limits_problem = limits_problem(out.limits);
  } else {
    out.limits_problem = "limits are being rewritten";  // the watch picks them up later
    out.limits_seq = 1;
  }
  if (!out.limits_problem) g_installed_seq.store(out.limits_seq, std::memory_order_relaxed);
  if (seg->header.scope.load(std::memory_order_relaxed) == static_cast<uint32_t>(ShmScope::Service))
    out.shared_buckets = seg->buckets;
  g_slot = claim_for(raw_getpid(), out.limits_problem ? 0 : out.limits_seq, false, slot_hint);
  out.counters = g_slot ? &g_slot->counters : nullptr;
  out.wait_hist = &seg->wait_hist;
  out.shares = &seg->shares;
  out.fleet = &seg->fleet;
  out.protect = &seg->protect;
  return true;
}

size_t shm_slot_hint(char* out, size_t cap) noexcept {
  int pid = g_claim_pid;
  uint64_t start = g_claim_start, index = kMaxSlots, epoch = g_claim_epoch;
  if (g_fork_unclaimed && g_seg && cap >= 12 + 4 * 21) {
    // A forked child that claimed nothing (it claims at its first call): the new image
    // holds no slot either. Said with no start time (a "none" hint needs none: whoever
    // else reads it holds no slot of this pid either) and the epoch as it is now, read
    // through the descriptor (its page is not mapped in this child yet).
    pid = raw_getpid();
    start = 0;
    epoch = 0;
    long fd = shm_kept_fd();
    if (fd < 0 || raw_syscall4(SYS_pread64, fd, reinterpret_cast<long>(&epoch), sizeof epoch,
                               static_cast<long>(offsetof(ShmSegment, exited.slot_epoch))) != sizeof epoch)
      return 0;
  } else {
    if (!g_seg || pid <= 0 || raw_getpid() != pid || cap < 12 + 4 * 21) return 0;
    ShmSlot* slot = __atomic_load_n(&g_slot, __ATOMIC_RELAXED);
    if (slot) index = slot_index(*g_seg, *slot);
  }
  size_t n = 0;
  for (const char* s = "BONSAI_SLOT="; *s; ++s) out[n++] = *s;
  n += put_number(out + n, static_cast<uint64_t>(pid));
  out[n++] = ':';
  n += put_number(out + n, start);
  out[n++] = ':';
  n += put_number(out + n, index);
  out[n++] = ':';
  n += put_number(out + n, epoch);
  out[n] = '\0';
  return n;
}

BONSAI_STARTUP bool shm_attached() noexcept { return g_seg != nullptr; }  // every exit asks

bool shm_lost() noexcept { return g_seg && shm_guard_lost(g_seg); }

void shm_publish_nohost(uint8_t host1, uint64_t units) noexcept {
  if (!g_seg || host1 == 0 || host1 > kNoHostPublished || shm_lost()) return;
  g_seg->limits.nohost_taken[host1 - 1].fetch_add(units, std::memory_order_relaxed);
}

bool shm_notice_first(uint32_t bit) noexcept {
  if (!g_seg || shm_lost()) return true;
  return !(g_seg->exited.notices.fetch_or(bit, std::memory_order_relaxed) & bit);
}

bool shm_limits_fetch(LimitSet& out, uint64_t& seq, const char*& problem) noexcept {
  problem = nullptr;
  if (!g_seg || shm_lost() || !seqlock_read(g_seg->limits, out, seq, kReadTries)) return false;
  uint64_t old = g_installed_seq.load(std::memory_order_relaxed);
  if (old >= seq || !g_installed_seq.compare_exchange_strong(old, seq, std::memory_order_relaxed)) return false;
  problem = limits_problem(out);
  return problem == nullptr;
}

bool shm_open_layout_ours() noexcept {
  struct {
    uint64_t magic;
    uint32_t version;
  } head{};
  long fd = shm_kept_fd();
  return fd >= 0 && raw_syscall4(SYS_pread64, fd, reinterpret_cast<long>(&head), sizeof head, 0) == sizeof head &&
         head.magic == kShmMagic && head.version == BONSAI_ABI_VERSION;
}

uint64_t shm_limits_seq_now() noexcept {
  if (g_seg) return shm_lost() ? 0 : g_seg->limits.seq.load(std::memory_order_acquire);
  uint64_t seq = 0;
  long fd = shm_kept_fd();
  if (fd < 0 || raw_syscall4(SYS_pread64, fd, reinterpret_cast<long>(&seq), sizeof seq,
                             static_cast<long>(offsetof(ShmSegment, limits.seq))) != static_cast<long>(sizeof seq))
    return 0;
  return seq;
}

bool shm_service_supervised() noexcept {
  uint64_t seq = 0, again = 0, protect = 0;
  uint32_t count = 0;
  if (g_seg) {
    if (shm_lost()) return true;
    seq = g_seg->limits.seq.load(std::memory_order_acquire);
    count = __atomic_load_n(&g_seg->limits.set.count, __ATOMIC_RELAXED);
    protect = g_seg->protect.calls.load(std::memory_order_relaxed);
    again = g_seg->limits.seq.load(std::memory_order_acquire);
  } else {
    const long fd = shm_kept_fd();
    auto at = [fd](void* to, size_t len, size_t off) {
      return raw_syscall4(SYS_pread64, fd, reinterpret_cast<long>(to), static_cast<long>(len), static_cast<long>(off)) ==
             static_cast<long>(len);
    };
    if (fd < 0 || !shm_open_layout_ours() || !at(&seq, sizeof seq, offsetof(ShmSegment, limits.seq)) ||
        !at(&count, sizeof count, offsetof(ShmSegment, limits.set.count)) ||
        !at(&protect, sizeof protect, offsetof(ShmSegment, protect.calls)) ||
        !at(&again, sizeof again, offsetof(ShmSegment, limits.seq)))
      return true;
  }
  if (seq == 0 || (seq & 1) || seq != again || count > kMaxRules) return true;
  return sv_service_supervised(count, protect);
}

void shm_mark_seen(uint64_t seq) noexcept {
  if (g_slot) g_slot->seen_seq.store(seq, std::memory_order_release);
}

ShmSlot* shm_wait_begin() noexcept {
  ShmSlot* slot = __atomic_load_n(&g_slot, __ATOMIC_RELAXED);
  slot_wait_enter(slot);
  return slot;
}

void shm_wait_end(ShmSlot* slot) noexcept { slot_wait_leave(slot); }

void shm_mark_flag(uint32_t bit) noexcept {
  if (ShmSlot* slot = __atomic_load_n(&g_slot, __ATOMIC_RELAXED)) slot->flags.fetch_or(bit, std::memory_order_relaxed);
}

void shm_fork_drop_slot() noexcept {
  g_slot = nullptr;
  g_fork_unclaimed = true;
}

ProcessCounters* shm_fork_counters(ProcessCounters* current, ProcessCounters* fallback) noexcept {
  if (!g_seg) return current;
  uint64_t seen = g_slot ? g_slot->seen_seq.load(std::memory_order_relaxed) : 0;
  g_slot = claim_for(static_cast<int>(getpid()), seen, true);
  g_fork_unclaimed = false;
  return g_slot ? &g_slot->counters : fallback;
}

void shm_release_at_exit() noexcept {
  if (!g_seg || !g_slot) return;
  slot_release(*g_seg, *g_slot);
  g_slot = nullptr;
}

}  // namespace bonsai
