// SPDX-License-Identifier: MIT
// Helpers of `bonsaictl run` (see run_env.h).
#include "launch/run_env.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/resource.h>
#include <cstdlib>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "base/diag.h"
#include "segment/shm_client.h"
#include "shm/shm_fd.h"
#include "shm/shm_proc.h"
#include "shm/shm_slots.h"

namespace bonsai::ctl {
namespace {

bool is_file(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

}  // namespace

std::string library_find() {
  if (const char* env = std::getenv("BONSAI_LIB"); env && *env) {
    if (!is_file(env)) runtime_error(fmt::format("BONSAI_LIB={} does not exist", env));
    char real[PATH_MAX];  // absolute: a relative path breaks after a cd in a child
    if (!realpath(env, real)) runtime_error(fmt::format("BONSAI_LIB={}: {}", env, std::strerror(errno)));
    return real;
  }
  // The build tree: next to bonsaictl. An installed bonsaictl (make install, the
  // Debian package) was built with BONSAI_LIBDIR (and BONSAI_BINDIR): it looks under
  // the root it runs from first (a DESTDIR staging: ROOT/usr/bin -> ROOT/usr/lib/...),
  // then at the fixed path. ../lib is the layout of older installs.
  std::string dir = self_dir();
  std::vector<std::string> paths{dir + "/libbonsai.so"};
#ifdef BONSAI_LIBDIR
  const std::string bindir = BONSAI_BINDIR, libdir = BONSAI_LIBDIR;
  if (dir.size() > bindir.size() && dir.compare(dir.size() - bindir.size(), bindir.size(), bindir) == 0)
    paths.push_back(dir.substr(0, dir.size() - bindir.size()) + libdir + "/libbonsai.so");
  paths.push_back(libdir + "/libbonsai.so");
#endif
  paths.push_back(dir + "/../lib/libbonsai.so");
  for (const std::string& p : paths)
    if (is_file(p)) {
      char real[PATH_MAX];
      return realpath(p.c_str(), real) ? std::string(real) : p;
    }
#ifdef BONSAI_LIBDIR
  runtime_error(fmt::format("cannot find libbonsai.so in {} or next to bonsaictl ({}); set BONSAI_LIB", libdir, dir));
#else
  runtime_error(fmt::format("cannot find libbonsai.so next to bonsaictl ({}) or in ../lib; set BONSAI_LIB", dir));
#endif
}

namespace {

// LD_PRELOAD's entries (ld.so separates them with ':' or ' '), empty ones dropped.
std::vector<std::string> preload_entries(const std::string& value) {
  std::vector<std::string> out;
  std::string item;
  for (char ch : value + ':') {
    if (ch != ':' && ch != ' ') item += ch;
    else if (!item.empty()) out.push_back(std::move(item)), item.clear();
  }
  return out;
}

std::string join_colon(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& e : v) out += (out.empty() ? "" : ":") + e;
  return out;
}

}  // namespace

std::string preload_entry(const std::string& lib) {
  size_t slash = lib.rfind('/');
  if (slash == std::string::npos) return lib;
  std::string dir = lib.substr(0, slash);
  for (const char* d : {"/$LIB", "/lib/x86_64-linux-gnu", "/lib64", "/lib"})
    if (!is_file(dir + d + "/libbonsai.so")) return lib;
  return dir + "/$LIB/libbonsai.so";
}

void mark_not_limited(Segment* seg, const char* path, uint32_t flags) {
  if (!seg) return;
  uint64_t start = 0;
  if (proc_status(getpid(), start) != ProcStatus::Alive) return;
  const char* base = std::strrchr(path, '/');
  char comm[16] = {};
  std::strncpy(comm, base ? base + 1 : path, sizeof comm - 1);
  if (ShmSlot* s = slot_claim(seg->seg(), getpid(), start, comm, 0, unix_now_ns()))
    s->flags.store(flags, std::memory_order_release);
}

std::string preload_value(const std::string& lib, const std::string& existing) {
  std::vector<std::string> keep{lib};
  for (std::string& e : preload_entries(existing))
    if (e != lib) keep.push_back(std::move(e));
  return join_colon(keep);
}

std::string preload_without_bonsai(const std::string& existing) {
  std::vector<std::string> keep;
  for (std::string& e : preload_entries(existing)) {
    size_t slash = e.rfind('/');
    if ((slash == std::string::npos ? e : e.substr(slash + 1)) != "libbonsai.so") keep.push_back(std::move(e));
  }
  return join_colon(keep);
}

std::string command_resolve(const std::string& cmd) {
  if (cmd.find('/') != std::string::npos) return access(cmd.c_str(), X_OK) == 0 ? cmd : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string p = (dir.empty() ? "." : dir) + "/" + cmd;
    if (is_file(p) && access(p.c_str(), X_OK) == 0) return p;
    start = end + 1;
  }
  return "";
}

int segment_fd_handoff(const std::string& path, std::string& why) {
  int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW);
  if (fd < 0) {
    why = fmt::format("cannot open {}: {}", path, std::strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ctl_uid() || (st.st_mode & 077)) {
    ::close(fd);
    why = fmt::format("{} is not a private file of this user", path);
    return -1;
  }
  rlimit rl{};
  unsigned long soft = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
  int high = fcntl(fd, F_DUPFD, shm_fd_floor(soft));
  if (high < 0) high = fcntl(fd, F_DUPFD, 3);
  ::close(fd);
  if (high < 0) why = fmt::format("cannot duplicate a descriptor: {}", std::strerror(errno));
  return high;
}

std::string privdrop_warning(const std::string& lib, unsigned euid) {
  if (euid != 0) return "";
  // The loader of a child that dropped privileges reads the library as that user.
  std::string p = lib;
  for (bool file = true; !p.empty(); file = false) {
    struct stat st;
    if (stat(p.c_str(), &st) != 0) break;
    mode_t need = file ? S_IROTH : S_IXOTH;
    if (!(st.st_mode & need))
      return fmt::format("{} is not {} by other users: a child that drops privileges (setpriv, su, runuser) "
                         "cannot load {} and runs WITHOUT LIMITS; install it where all users can read it",
                         p, file ? "readable" : "searchable", lib);
    size_t slash = p.rfind('/');
    if (slash == std::string::npos || slash == 0) break;
    p.resize(slash);
  }
  return "";
}

bool io_uring_export(const std::string& flag, const std::string& file) {
  const std::string& v = flag.empty() ? file : flag;
  if (v.empty()) return true;
  if (v != "deny" && v != "allow") return false;
  setenv("BONSAI_IO_URING", v.c_str(), 1);  // "allow" also overrides a deny the caller exported
  return true;
}

}  // namespace bonsai::ctl
