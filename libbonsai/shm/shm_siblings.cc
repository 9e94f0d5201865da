// SPDX-License-Identifier: MIT
// The user's services' published container takes (see shm_siblings.h).
#include "shm/shm_siblings.h"

#include <atomic>
#include <cstddef>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "abi/shm_abi.h"
#include "bucket/share.h"
#include "shm/shm_fd.h"
#include "shm/shm_name.h"
#include "sys/raw_open.h"
#include "sys/raw_stat.h"
#include "sys/raw_syscall.h"

namespace bonsai {
namespace {

struct Sib {
  uint64_t ino;
  uint64_t at;
  uint64_t taken[kNoHostPublished];
};

// The refresher's state: only the holder of g_busy touches it (static, not on the
// caller's stack: the caller is someone else's thread).
struct Scan {
  Sib old[kSiblingsMax];
  uint32_t old_n;
  Sib now[kSiblingsMax];
  alignas(8) char dents[2048];
  LimitSet set;
};
constinit Scan g_scan{};
// The refresher's start time, 0 when none: a refresh left half-way (a fork child of a
// refreshing thread) is taken over after kSiblingsStaleNs.
constinit std::atomic<uint64_t> g_busy{0};
constexpr uint64_t kSiblingsStaleNs = 1'000'000'000;
constinit std::atomic<uint64_t> g_next_ns{0};
constinit std::atomic<uint64_t> g_reserved[kNoHostPublished]{};

constexpr uint32_t kDentCalls = 16;  // getdents64 calls per refresh (a full /dev/shm is not scanned to its end)

long pread_all(int fd, void* buf, size_t n, uint64_t off) noexcept {
  return raw_syscall4(SYS_pread64, fd, reinterpret_cast<long>(buf), static_cast<long>(n), static_cast<long>(off));
}

// One segment's counters and guarantees; false if it is not one (or a writer was busy).
bool read_one(int fd, unsigned uid, Sib& out, uint64_t guar[kNoHostPublished]) noexcept {
  struct stat st;
  if (raw_fstat(fd, st) != 0 || !S_ISREG(st.st_mode) || (st.st_uid != uid && st.st_uid != shm_uid_here(uid)))
    return false;
  uint64_t magic = 0;
  if (pread_all(fd, &magic, sizeof magic, 0) != sizeof magic || magic != kShmMagic) return false;
  constexpr uint64_t lim = offsetof(ShmSegment, limits);
  uint64_t head[8];  // seq, changed_unix_ns, nohost_taken[6]
  static_assert(sizeof head == offsetof(ShmLimits, set));
  if (pread_all(fd, head, sizeof head, lim) != sizeof head || (head[0] & 1)) return false;
  Scan& s = g_scan;
  if (pread_all(fd, &s.set, sizeof s.set, lim + offsetof(ShmLimits, set)) != sizeof s.set) return false;
  uint64_t seq = 0;
  if (pread_all(fd, &seq, sizeof seq, lim) != sizeof seq || seq != head[0]) return false;
  out.ino = st.st_ino;
  for (uint32_t h = 0; h < kNoHostPublished; ++h) out.taken[h] = head[2 + h], guar[h] = 0;
  uint32_t n = s.set.count < kMaxRules ? s.set.count : kMaxRules;
  for (uint32_t i = 0; i < n; ++i) {
    const Rule& r = s.set.rules[i];
    if (r.host1 == 0 || r.host1 > kNoHostPublished || !rule_ceil_above(r)) continue;
    uint64_t rate = rule_rate_micro(r) / kRateMicro;
    uint64_t& g = guar[r.host1 - 1];
    g = g + rate < g ? ~uint64_t{0} : g + rate;
  }
  return true;
}

void refresh(const char* prefix, unsigned uid, uint64_t now) noexcept {
  Scan& s = g_scan;
  uint64_t sum[kNoHostPublished] = {};
  uint32_t n = 0;
  long dir = raw_open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir < 0) return;  // the sums stay as they were
  for (uint32_t call = 0; call < kDentCalls && n < kSiblingsMax; ++call) {
    long got = raw_syscall3(SYS_getdents64, dir, reinterpret_cast<long>(s.dents), sizeof s.dents);
    if (got <= 0) break;
    for (long at = 0; at < got && n < kSiblingsMax;) {
      // struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name
      unsigned short reclen;
      __builtin_memcpy(&reclen, s.dents + at + 16, sizeof reclen);
      if (reclen < 20 || at + reclen > got) break;
      const char* name = s.dents + at + 19;
      at += reclen;
      size_t len = 0;
      while (len < reclen - 19u && name[len]) ++len;
      if (shm_service_of_file(std::string_view(name, len), prefix ? prefix : "", uid).empty()) continue;
      long fd = raw_syscall4(SYS_openat, dir, reinterpret_cast<long>(name), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0);
      if (fd < 0) continue;
      uint64_t guar[kNoHostPublished];
      Sib& cur = s.now[n];
      cur.at = now;
      bool ok = read_one(static_cast<int>(fd), uid, cur, guar);
      raw_close(static_cast<int>(fd));
      if (!ok) continue;
      ++n;
      for (uint32_t i = 0; i < s.old_n; ++i) {
        if (s.old[i].ino != cur.ino) continue;
        for (uint32_t h = 0; h < kNoHostPublished; ++h) {
          uint64_t r = share_reserved_rate(s.old[i].taken[h], cur.taken[h], now - s.old[i].at, guar[h]);
          sum[h] = sum[h] + r < sum[h] ? ~uint64_t{0} : sum[h] + r;
        }
        break;
      }
    }
  }
  raw_close(static_cast<int>(dir));
  for (uint32_t i = 0; i < n; ++i) s.old[i] = s.now[i];
  s.old_n = n;
  for (uint32_t h = 0; h < kNoHostPublished; ++h) g_reserved[h].store(sum[h], std::memory_order_relaxed);
}

}  // namespace

uint64_t shm_siblings_reserved(const char* prefix, unsigned uid, uint8_t host1, uint64_t now_ns) noexcept {
  if (host1 == 0 || host1 > kNoHostPublished) return 0;
  uint64_t busy = g_busy.load(std::memory_order_relaxed);
  if (now_ns >= g_next_ns.load(std::memory_order_relaxed) && now_ns &&
      (busy == 0 || now_ns - busy > kSiblingsStaleNs) &&
      g_busy.compare_exchange_strong(busy, now_ns, std::memory_order_acquire)) {
    if (now_ns >= g_next_ns.load(std::memory_order_relaxed)) {
      g_next_ns.store(now_ns + kSiblingsRefreshNs, std::memory_order_relaxed);
      refresh(prefix, uid, now_ns);
    }
    g_busy.store(0, std::memory_order_release);
  }
  return g_reserved[host1 - 1].load(std::memory_order_relaxed);
}

}  // namespace bonsai
