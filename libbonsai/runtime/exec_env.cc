// SPDX-License-Identifier: MIT
// The start-up environment snapshot and the segment descriptor handed down at exec
// (see exec_env.h). Set-up (capture, keep) runs once; everything the exec wrappers
// call uses raw system calls and the caller's buffer, and writes no global.
#include "runtime/exec_env.h"

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log/blog.h"
#include "runtime/options.h"
#include "shm/shm_attach.h"
#include "shm/shm_fd.h"
#include "sys/env.h"
#include "sys/raw_syscall.h"
#include "sys/self_map.h"
#include "sys/startup.h"

namespace bonsai {
namespace {

constexpr size_t kMaxKept = 32;
struct Kept {
  const char* entry;  // "NAME=value" in g_store
  size_t name_len;    // up to and including '='
  bool service;       // names the service: not added to a child given another service
};

// The kept settings and the library's path, copied at set-up. Zero-initialised, its
// file linked first (Makefile, STARTUP_BSS_SRC): its used start shares a page that
// every start touches anyway.
constinit char g_store[16384] = {};
BONSAI_STARTUP_DATA constinit size_t g_store_used = 0;
BONSAI_STARTUP_DATA constinit Kept g_kept[kMaxKept] = {};
BONSAI_STARTUP_DATA constinit size_t g_kept_n = 0;
BONSAI_STARTUP_DATA constinit const char* g_service = nullptr;  // our BONSAI_SERVICE value (in g_store)
// The library's path as loaded and as handed down (absolute): the loader's own string
// when it is absolute, else copies in g_store made at set-up (the working directory may
// change).
BONSAI_STARTUP_DATA constinit const char* g_lib = nullptr;
BONSAI_STARTUP_DATA constinit const char* g_lib_as_loaded = nullptr;

// Copies s[0, len) and a NUL to g_store. @return the copy, nullptr if it is full.
BONSAI_STARTUP const char* store_copy(const char* s, size_t len) {
  if (len >= sizeof g_store - g_store_used) return nullptr;
  char* copy = g_store + g_store_used;
  std::memcpy(copy, s, len);
  copy[len] = '\0';
  g_store_used += len + 1;
  return copy;
}

long raw_fcntl(int fd, int cmd, long arg) { return raw_syscall3(SYS_fcntl, fd, cmd, arg); }

bool starts(const char* s, const char* prefix, size_t len) { return std::strncmp(s, prefix, len) == 0; }
#define STARTS(s, lit) starts((s), lit, sizeof(lit) - 1)

// Is `token` (length len) the library? Exact path as loaded or its absolute path.
bool is_lib(const char* token, size_t len) {
  return (g_lib && std::strlen(g_lib) == len && starts(token, g_lib, len)) ||
         (g_lib_as_loaded && std::strlen(g_lib_as_loaded) == len && starts(token, g_lib_as_loaded, len));
}

// LD_PRELOAD value `v` (':' or ' ' separated) holds the library?
bool preload_has_lib(const char* v) {
  while (*v) {
    while (*v == ':' || *v == ' ') ++v;
    const char* b = v;
    while (*v && *v != ':' && *v != ' ') ++v;
    if (v > b && is_lib(b, static_cast<size_t>(v - b))) return true;
  }
  return false;
}

BONSAI_STARTUP void capture_one(const char* e, void* preload) {
  // Told apart without a string constant (runtime/options.h): no .rodata page per start.
  if (e[0] == 'L' && e[1] == 'D' && e[2] == '_' && e[3] == 'P' && e[4] == 'R' && e[5] == 'E' && e[6] == 'L' &&
      e[7] == 'O' && e[8] == 'A' && e[9] == 'D' && e[10] == '=')
    *static_cast<const char**>(preload) = e + 11;
  if (!env_is_bonsai(e)) return;
  Opt o{};
  const char* value = nullptr;
  bool known = option_entry(e, o, value);
  if (known && (o == Opt::shm_fd || o == Opt::slot || o == Opt::leave)) return;
  const char* eq = std::strchr(e, '=');
  if (!eq) return;
  size_t len = std::strlen(e) + 1;
  if (g_kept_n == kMaxKept || g_store_used + len > sizeof g_store) {
    blog(LogLevel::Warn, "too many or too long BONSAI_* settings: '%.40s' is not handed down to executed programs", e);
    return;
  }
  const char* copy = store_copy(e, len - 1);
  size_t name_len = static_cast<size_t>(eq - e) + 1;
  bool service = known && (o == Opt::service || o == Opt::shm_uid);
  g_kept[g_kept_n++] = Kept{copy, name_len, service};
  if (known && o == Opt::service) g_service = copy + name_len;
}

// The LD_PRELOAD entry that names the library through the loaders' choice
// (".../$LIB/libbonsai.so", docs/reference/libc.md): glibc's loader expanded `$LIB`
// (l_name is its result), musl's did not. Handed down as written, so that the loader of
// each program executed picks its own build. Compared against immediates: no string
// constant (.rodata) is touched at set-up (sys/startup.h). @return its length, 0 if none.
BONSAI_STARTUP bool names_lib_dst(const char* p, const char* end) {  // "$LIB" or "${LIB}" at p
  if (end - p >= 4 && p[0] == '$' && p[1] == 'L' && p[2] == 'I' && p[3] == 'B') return true;
  return end - p >= 6 && p[0] == '$' && p[1] == '{' && p[2] == 'L' && p[3] == 'I' && p[4] == 'B' && p[5] == '}';
}

BONSAI_STARTUP bool ends_libbonsai(const char* b, const char* e) {  // ".../libbonsai.so"
  if (e - b < 14) return false;
  const char* p = e - 13;
  return p[0] == '/' && p[1] == 'l' && p[2] == 'i' && p[3] == 'b' && p[4] == 'b' && p[5] == 'o' && p[6] == 'n' &&
         p[7] == 's' && p[8] == 'a' && p[9] == 'i' && p[10] == '.' && p[11] == 's' && p[12] == 'o';
}

BONSAI_STARTUP size_t choice_entry(const char* v, const char** at) {
  while (v && *v) {
    while (*v == ':' || *v == ' ') ++v;
    const char* b = v;
    while (*v && *v != ':' && *v != ' ') ++v;
    bool dst = false;
    for (const char* p = b; p < v && !dst; ++p) dst = names_lib_dst(p, v);
    if (dst && ends_libbonsai(b, v)) {
      *at = b;
      return static_cast<size_t>(v - b);
    }
  }
  return 0;
}

size_t put(char* out, const char* s) {
  size_t n = std::strlen(s);
  std::memcpy(out, s, n);
  return n;
}

}  // namespace

BONSAI_STARTUP bool exec_env_leaving(const char* v) noexcept { return v && *v && !(v[0] == '0' && v[1] == '\0'); }

BONSAI_STARTUP void exec_env_capture() noexcept {
  const char* preload = nullptr;  // LD_PRELOAD's value
  env_each(capture_one, &preload);
  // The library's path is looked for only when there is something to hand down
  // (exec_plan); else nothing at every start. An absolute path (bonsaictl's, an
  // installed library's) is handed down as loaded: no copy, no realpath (a readlink per
  // component); a relative one is resolved now, while the working directory is the one
  // it was loaded from.
  if (g_kept_n == 0) return;
  const link_map* self = self_link_map();
  const char* name = self ? self->l_name : nullptr;
  if (!name || !*name || std::strlen(name) >= PATH_MAX) return;
  const char* choice = nullptr;
  size_t choice_len = choice_entry(preload, &choice);
  if (choice_len && choice[0] == '/' && choice_len < PATH_MAX) {  // as written; l_name: as loaded
    if (const char* copy = store_copy(choice, choice_len)) {
      g_lib = copy;
      g_lib_as_loaded = name;
    }
    return;
  }
  if (name[0] == '/') {
    g_lib = g_lib_as_loaded = name;
    return;
  }
  g_lib_as_loaded = store_copy(name, std::strlen(name));
  char resolved[PATH_MAX];
  if (g_lib_as_loaded && realpath(name, resolved)) g_lib = store_copy(resolved, std::strlen(resolved));
}

const char* exec_env_kept(const char* name_eq) noexcept {
  size_t len = std::strlen(name_eq);
  for (size_t k = 0; k < g_kept_n; ++k)
    if (g_kept[k].name_len == len && starts(g_kept[k].entry, name_eq, len)) return g_kept[k].entry + len;
  return nullptr;
}

ExecPlan exec_plan(char* const* envp, char* buf, size_t cap) noexcept {
  ExecPlan plan{envp, -1, false, nullptr, 0};
  if (g_kept_n == 0) return plan;  // nothing to hand down (no settings, or leaving)
  uint32_t present = 0;
  long ld = -1, fdi = -1, sloti = -1;
  bool foreign = false;
  size_t n = 0;
  for (; envp && envp[n]; ++n) {
    const char* e = envp[n];
    if (e[0] == 'L') {
      if (STARTS(e, "LD_PRELOAD=")) ld = static_cast<long>(n);
    } else if (e[0] == 'B' && STARTS(e, "BONSAI_")) {
      if (STARTS(e, "BONSAI_LEAVE=")) {
        if (exec_env_leaving(e + sizeof("BONSAI_LEAVE=") - 1)) return plan;  // the way out: as asked
      } else if (STARTS(e, "BONSAI_SHM_FD=")) {
        fdi = static_cast<long>(n);
      } else if (STARTS(e, "BONSAI_SLOT=")) {
        sloti = static_cast<long>(n);
      } else {
        for (size_t k = 0; k < g_kept_n; ++k)
          if (starts(e, g_kept[k].entry, g_kept[k].name_len)) present |= 1u << k;
        if (STARTS(e, "BONSAI_SERVICE=") && (!g_service || std::strcmp(e + sizeof("BONSAI_SERVICE=") - 1, g_service)))
          foreign = true;
      }
    }
  }
  bool need_lib = g_lib && !(ld >= 0 && preload_has_lib(envp[ld] + sizeof("LD_PRELOAD=") - 1));
  uint32_t missing = 0;
  size_t n_missing = 0;
  for (size_t k = 0; k < g_kept_n; ++k)
    if (!(present & (1u << k)) && !(foreign && g_kept[k].service)) {
      missing |= 1u << k;
      ++n_missing;
    }
  if (!foreign) plan.fd = shm_fd_for_exec(plan.fd_opened);
  bool need_fd = plan.fd >= 0 && !(fdi >= 0 && shm_parse_uint(envp[fdi] + sizeof("BONSAI_SHM_FD=") - 1, INT_MAX) == plan.fd);
  // What this process knows of its slot, for the program it becomes (same pid): else
  // that program's claim passes over every slot a tenant may have made look taken.
  char hint[128];
  size_t hint_len = foreign ? 0 : shm_slot_hint(hint, sizeof hint);
  bool need_hint = hint_len && !(sloti >= 0 && std::strcmp(envp[sloti], hint) == 0);
  if (!need_lib && !missing && !need_fd && !need_hint) return plan;  // the usual case: as asked

  size_t slots = n + 4 + n_missing;
  const char* old_ld = ld >= 0 ? envp[ld] + sizeof("LD_PRELOAD=") - 1 : "";
  size_t strings = (need_lib ? sizeof("LD_PRELOAD=") + std::strlen(g_lib) + 1 + std::strlen(old_ld) : 0) + 40 +
                   (need_hint ? hint_len + 1 : 0);
  size_t need = slots * sizeof(char*) + strings;
  char* mem = buf;
  if (need > cap) {
    int saved = errno;
    void* p = mmap(nullptr, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    errno = saved;
    if (p == MAP_FAILED) {
      BONSAI_LOG_ONCE(LogLevel::Warn, "no memory for the environment of an executed program: it runs as asked, "
                                      "perhaps without the service's limits");
      return plan;
    }
    plan.mapped = p;
    plan.mapped_len = need;
    mem = static_cast<char*>(p);
  }
  auto** out = reinterpret_cast<char**>(mem);
  char* s = mem + slots * sizeof(char*);
  size_t o = 0;
  for (size_t i = 0; i < n; ++i) {
    if ((need_lib && static_cast<long>(i) == ld) || (need_fd && static_cast<long>(i) == fdi) ||
        (need_hint && static_cast<long>(i) == sloti))
      continue;
    out[o++] = envp[i];
  }
  if (need_lib) {
    out[o++] = s;
    s += put(s, "LD_PRELOAD=");
    s += put(s, g_lib);
    if (*old_ld) {
      *s++ = ':';
      s += put(s, old_ld);
    }
    *s++ = '\0';
  }
  if (need_fd) {
    out[o++] = s;
    s += put(s, "BONSAI_SHM_FD=");
    char digits[16];
    int d = 0;
    for (unsigned v = static_cast<unsigned>(plan.fd); d == 0 || v; v /= 10) digits[d++] = static_cast<char>('0' + v % 10);
    while (d) *s++ = digits[--d];
    *s++ = '\0';
  }
  if (need_hint) {
    out[o++] = s;
    std::memcpy(s, hint, hint_len + 1);
    s += hint_len + 1;
  }
  for (size_t k = 0; k < g_kept_n; ++k)
    if (missing & (1u << k)) out[o++] = const_cast<char*>(g_kept[k].entry);
  out[o] = nullptr;
  plan.envp = out;
  return plan;
}

void exec_plan_arm(const ExecPlan& plan) noexcept {
  if (plan.fd >= 0) raw_fcntl(plan.fd, F_SETFD, 0);
}

void exec_plan_undo(const ExecPlan& plan) noexcept {
  if (plan.fd >= 0) {
    if (plan.fd_opened) raw_syscall3(SYS_close, plan.fd, 0, 0);
    else raw_fcntl(plan.fd, F_SETFD, FD_CLOEXEC);
  }
  if (plan.mapped) raw_syscall3(SYS_munmap, reinterpret_cast<long>(plan.mapped), static_cast<long>(plan.mapped_len), 0);
}

}  // namespace bonsai
