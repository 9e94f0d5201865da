// SPDX-License-Identifier: MIT
// Mapping and reading the host segment (see shm_host.h).
#include "shm/shm_host.h"

#include <cstdio>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/seqlock.h"
#include "shm/shm_check.h"
#include "shm/shm_fd.h"
#include "shm/shm_guard.h"
#include "shm/shm_name.h"
#include "sys/raw_open.h"
#include "sys/raw_stat.h"
#include "sys/word_copy.h"
#include "sys/str_build.h"

namespace bonsai {
namespace {

constinit std::atomic<ShmHost*> g_host{nullptr};
constinit std::atomic<bool> g_mapping{false};

}  // namespace

size_t shm_host_path(char* buf, size_t cap, const char* prefix, unsigned uid) noexcept {
  if (!prefix) prefix = "";
  if (!shm_prefix_valid(prefix)) return 0;
  return StrBuild(buf, cap).put("/dev/shm/").put(prefix).put("bonsai-host.").put_uint(uid).done();
}

bool shm_host_attach(const char* prefix, char* why, size_t cap, bool* newer) noexcept {
  if (cap) why[0] = '\0';
  if (newer) *newer = false;
  if (g_host.load(std::memory_order_acquire)) return true;
  if (g_mapping.exchange(true, std::memory_order_acquire)) return false;  // another thread is at it
  char path[256];
  unsigned uid = shm_owner_uid();
  bool ok = false;
  long fd = shm_host_path(path, sizeof path, prefix, uid) ? raw_open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0) : -1;
  struct stat st;
  if (fd < 0) {
    // absent: nothing to say (no capacity installed)
  } else if (raw_fstat(static_cast<int>(fd), st) != 0 || (st.st_uid != uid && st.st_uid != shm_uid_here(uid)) || (st.st_mode & 077) ||
             !S_ISREG(st.st_mode)) {
    std::snprintf(why, cap, "%s is not private to this user (owner or mode)", path);
  } else if (static_cast<size_t>(st.st_size) < sizeof(ShmHost)) {
    std::snprintf(why, cap, "%s is truncated or not a bonsai host segment", path);
  } else {
    // The base, its directory and any sections (layout 15 on; 14 is the base alone).
    const size_t map_len = shm_map_size(static_cast<size_t>(st.st_size), sizeof(ShmHost));
    void* p = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, static_cast<int>(fd), 0);
    if (p == MAP_FAILED) {
      std::snprintf(why, cap, "cannot map %s", path);
    } else {
      shm_guard_register(p, map_len);  // a truncation reads as zeros, never a SIGBUS
      auto* h = static_cast<ShmHost*>(p);
      if (const char* problem = host_header_problem(*h, static_cast<size_t>(st.st_size), map_len)) {
        if (problem == kShmNewerLayout) {
          std::snprintf(why, cap, "%s was made by a newer bonsai (host segment layout %u; this library reads %u..%u): "
                        "upgrade bonsai to borrow from it", path, __atomic_load_n(&h->header.version, __ATOMIC_RELAXED),
                        kShmOldestLayout, BONSAI_ABI_VERSION);
          if (newer) *newer = true;
        } else
          std::snprintf(why, cap, "%s %s", path, problem);
        shm_guard_unregister(p);
        munmap(p, map_len);
      } else {
        g_host.store(h, std::memory_order_release);
        ok = true;
      }
    }
  }
  if (fd >= 0) raw_close(static_cast<int>(fd));
  g_mapping.store(false, std::memory_order_release);
  return ok;
}

ShmHost* shm_host() noexcept {
  ShmHost* h = g_host.load(std::memory_order_acquire);
  if (h && shm_guard_lost(h)) return nullptr;  // truncated under us: zeros, not capacity
  return h;
}

bool shm_host_rule(uint8_t host1, Rule& out) noexcept {
  ShmHost* h = shm_host();
  if (!h || host1 == 0 || host1 > kMaxRules) return false;
  uint64_t s1 = h->capacity.seq.load(std::memory_order_acquire);
  if (s1 & 1) return false;
  uint32_t n = __atomic_load_n(&h->capacity.set.count, __ATOMIC_ACQUIRE);
  if (host1 > n || n > kMaxRules) return false;
  words_load(&out, &h->capacity.set.rules[host1 - 1], sizeof out);
  return h->capacity.seq.load(std::memory_order_acquire) == s1;
}

bool shm_host_capacity(LimitSet& out) noexcept {
  ShmHost* h = shm_host();
  uint64_t seq;
  if (!h || !seqlock_read(h->capacity, out, seq, 1000)) return false;
  return out.count <= kMaxRules;
}

}  // namespace bonsai
