// SPDX-License-Identifier: MIT
// bonsai-oci-runtime (see oci_runtime.h): the bundle's config.json edited for a container
// with a bonsai.dev/service device, then the real runtime executed with the same
// arguments.
#include "launch/oci_runtime.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <fstream>
#include <iostream>
#include <linux/openat2.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

#include "abi/program_kind.h"
#include "abi/shm_abi.h"

namespace bonsai::ctl {
namespace {

using json = nlohmann::json;

void say(const std::string& m) { fmt::print(stderr, "bonsai-oci-runtime: {}\n", m); }

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : std::string();
}

// The runtime that runs the container: BONSAI_OCI_RUNTIME, else the first runc in PATH
// that is not this program (a PATH where runc is a link to it would loop).
std::string real_runtime() {
  if (const char* r = std::getenv("BONSAI_OCI_RUNTIME"); r && *r) return r;
  std::string self = real_path("/proc/self/exe");
  const char* p = std::getenv("PATH");
  std::string dirs = p && *p ? p : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  dirs += ":/usr/sbin:/usr/bin:/sbin";
  size_t start = 0;
  while (start < dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string cand = dirs.substr(start, end - start) + "/runc";
    if (access(cand.c_str(), X_OK) == 0 && real_path(cand) != self) return cand;
    start = end + 1;
  }
  return "runc";
}

// A flag's name without its dashes and value (urfave/cli takes -name and --name).
std::string flag_name(const std::string& a) {
  size_t s = a.find_first_not_of('-');
  std::string n = s == std::string::npos ? "" : a.substr(s);
  return n.substr(0, n.find('='));
}

bool is_one_of(const std::string& n, std::initializer_list<const char*> names) {
  for (const char* x : names)
    if (n == x) return true;
  return false;
}

// What the engine asked of the runtime, as far as the edit needs it.
struct Call {
  size_t cmd = 0;              // index of the command word (0: none)
  std::string bundle = ".";    // --bundle, default the current folder (runc's rule)
  long preserve = 0;           // --preserve-fds
  size_t preserve_at = 0;      // index of the argument holding its value (0: not given)
  bool preserve_eq = false;    // given as --preserve-fds=N
};

Call parse(std::vector<std::string>& a) {
  Call c;
  size_t i = 1;
  for (; i < a.size(); ++i) {
    if (a[i].empty() || a[i][0] != '-') break;
    std::string n = flag_name(a[i]);
    if (a[i].find('=') == std::string::npos && is_one_of(n, {"log", "log-format", "root", "criu", "rootless"})) ++i;
  }
  if (i >= a.size()) return c;
  c.cmd = i;
  for (size_t j = i + 1; j < a.size(); ++j) {
    if (a[j].empty() || a[j][0] != '-') continue;
    if (a[j] == "--") break;
    std::string n = flag_name(a[j]);
    bool eq = a[j].find('=') != std::string::npos;
    bool valued = is_one_of(n, {"bundle", "b", "preserve-fds", "console-socket", "pid-file"});
    if (!valued) continue;
    std::string v = eq ? a[j].substr(a[j].find('=') + 1) : (j + 1 < a.size() ? a[j + 1] : "");
    if (n == "bundle" || n == "b") c.bundle = v;
    if (n == "preserve-fds") {
      c.preserve = std::strtol(v.c_str(), nullptr, 10);
      c.preserve_at = eq ? j : j + 1;
      c.preserve_eq = eq;
    }
    if (!eq) ++j;
  }
  return c;
}

std::string env_get(const json& env, const std::string& key) {
  if (!env.is_array()) return {};
  std::string pre = key + "=";
  std::string out;
  for (const auto& e : env)
    if (e.is_string() && e.get<std::string>().rfind(pre, 0) == 0) out = e.get<std::string>().substr(pre.size());
  return out;  // the last one wins, as in execve's environment lookups
}

bool name_ok(const std::string& s) {
  if (s.empty() || s.size() > 200) return false;
  for (char ch : s)
    if (ch == '/' || ch == '\0' || ch == '\n') return false;
  return true;
}

// The segment a device mounts, opened here on the host: the mount's source must be a
// regular private file (mode 0600) of the segment's owner, not a symbolic link. -1 and
// `why` if not.
int open_segment(const std::string& source, unsigned owner, std::string& why) {
  int fd = ::open(source.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    why = fmt::format("cannot open {}: {}", source, std::strerror(errno));
    return -1;
  }
  // Out of the way of the number it is handed to runc as (the lowest free ones).
  if (int high = fcntl(fd, F_DUPFD_CLOEXEC, 64); high >= 0) {
    ::close(fd);
    fd = high;
  }
  // What a container's processes of any uid will hold: only a segment (its magic first;
  // the library checks the rest), never another private file of the owner's a mount
  // happens to name.
  struct stat st;
  uint64_t magic = 0;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != owner || (st.st_mode & 077) ||
      st.st_size < static_cast<off_t>(sizeof(ShmSegment)) || pread(fd, &magic, sizeof magic, 0) != sizeof magic ||
      magic != kShmMagic) {
    ::close(fd);
    why = fmt::format("{} is not a segment of uid {} (a private regular file that begins as one)", source, owner);
    return -1;
  }
  return fd;
}

// args[0] as runc will find it in the container's root (PATH of the container's
// environment, the working folder for a relative name), opened without leaving the
// root (RESOLVE_IN_ROOT: its links resolve as they will in there). -1 if not found.
int open_command(const std::string& rootfs, const std::string& cmd, const std::string& cwd, const std::string& path_env) {
  int root = ::open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return -1;
  std::vector<std::string> cands;
  if (cmd.find('/') != std::string::npos) {
    cands.push_back(cmd[0] == '/' ? cmd : (cwd.empty() ? "/" : cwd) + "/" + cmd);
  } else {
    std::string dirs = path_env.empty() ? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" : path_env;
    std::stringstream ss(dirs);
    std::string d;
    while (std::getline(ss, d, ':')) cands.push_back((d.empty() ? cwd : d) + "/" + cmd);
  }
  int found = -1;
  for (const auto& c : cands) {
    open_how how{};
    how.flags = O_RDONLY | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    long fd = syscall(SYS_openat2, root, c.c_str(), &how, sizeof how);
    if (fd < 0) continue;
    struct stat st;
    if (fstat(static_cast<int>(fd), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111)) {
      found = static_cast<int>(fd);
      break;
    }
    ::close(static_cast<int>(fd));
  }
  ::close(root);
  return found;
}

bool has_mount(const json& mounts, const std::string& dest, std::string* source) {
  if (!mounts.is_array()) return false;
  for (const auto& m : mounts)
    if (m.is_object() && m.value("destination", "") == dest) {
      if (source) *source = m.value("source", "");
      return true;
    }
  return false;
}

// Descriptors systemd socket activation hands runc (it passes them on before ours).
long listen_fds() {
  const char* pid = std::getenv("LISTEN_PID");
  const char* n = std::getenv("LISTEN_FDS");
  if (!pid || !n || std::strtol(pid, nullptr, 10) != getpid()) return 0;
  long v = std::strtol(n, nullptr, 10);
  return v > 0 && v < 4096 ? v : 0;
}

void write_config(const std::string& path, const json& cfg) {
  std::string tmp = path + ".bonsai.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << cfg.dump();
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp);
  }
  struct stat st;
  if (stat(path.c_str(), &st) == 0) chmod(tmp.c_str(), st.st_mode & 07777);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot replace {}: {}", path, std::strerror(e)));
  }
}

// The edit of a `create`/`run`: the segment's descriptor at `fd_at` (when *seg_fd >= 0)
// and a static command through the supervisor. False: not a container of a device (or
// nothing to do).
bool edit_bundle(const Call& c, long fd_at, int* seg_fd) {
  std::string cfg_path = c.bundle + "/config.json";
  json cfg;
  {
    std::ifstream in(cfg_path);
    if (!in) return false;
    cfg = json::parse(in);
  }
  json& proc = cfg["process"];
  json& env = proc["env"];
  std::string service = env_get(env, "BONSAI_SERVICE");
  std::string uid_text = env_get(env, "BONSAI_SHM_UID");
  if (service.empty() || uid_text.empty()) return false;  // no device of bonsai's
  std::string prefix = env_get(env, "BONSAI_SHM_PREFIX");
  char* end = nullptr;
  unsigned long owner = std::strtoul(uid_text.c_str(), &end, 10);
  if (!name_ok(service) || !name_ok(prefix) || *end || end == uid_text.c_str() || owner > UINT_MAX) {
    say(fmt::format("BONSAI_SERVICE '{}' / BONSAI_SHM_UID '{}' are not a device's: config.json left as it is",
                    service, uid_text));
    return false;
  }
  std::string dest = fmt::format("/dev/shm/{}bonsai.{}.{}", prefix, owner, service);
  std::string source;
  const json& mounts = cfg.contains("mounts") ? cfg["mounts"] : json();
  bool changed = false;
  if (!has_mount(mounts, dest, &source)) {
    say(fmt::format("service '{}': the container mounts no {} (not a bonsai.dev/service device): config.json left "
                    "as it is", service, dest));
    return false;
  }
  // 1. The segment, for whatever uid the container's processes run as.
  std::string why;
  int fd = open_segment(source, static_cast<unsigned>(owner), why);
  // A descriptor already at `fd_at` is one the engine leaked to the runtime (Docker's shim:
  // its socket, fd 3): runc uses none by number beyond those it passes on, so ours
  // replaces it in this process only.
  if (fd >= 0) {
    json kept = json::array();
    for (const auto& e : env)
      if (!(e.is_string() && e.get<std::string>().rfind("BONSAI_SHM_FD=", 0) == 0)) kept.push_back(e);
    kept.push_back(fmt::format("BONSAI_SHM_FD={}", fd_at));
    env = kept;
    *seg_fd = fd;
    changed = true;
  } else {
    say(fmt::format("service '{}': {}: a container user other than uid {} runs WITHOUT the service's limits",
                    service, why, owner));
  }
  // 2. A static or Go command: through the supervisor the device mounts.
  std::string ctl = env_get(env, "BONSAI_CTL");
  if (proc.contains("args") && proc["args"].is_array() && !proc["args"].empty() && proc["args"][0].is_string()) {
    std::string cmd = proc["args"][0].get<std::string>();
    std::string rootfs = cfg["root"].value("path", "rootfs");
    if (rootfs.empty() || rootfs[0] != '/') rootfs = c.bundle + "/" + rootfs;
    int pfd = cmd == ctl ? -1 : open_command(rootfs, cmd, proc.value("cwd", "/"), env_get(env, "PATH"));
    if (pfd >= 0) {
      ProgramKind kind = program_kind(fmt::format("/proc/self/fd/{}", pfd).c_str(), GoLook::Sections);
      ::close(pfd);
      if (kind == ProgramKind::Static || kind == ProgramKind::Go) {
        if (!ctl.empty() && has_mount(mounts, ctl, nullptr)) {
          json args = json::array({ctl, "sv-exec"});
          for (const auto& a : proc["args"]) args.push_back(a);
          proc["args"] = args;
          changed = true;
        } else {
          say(fmt::format("service '{}': {} is a {} program and the device mounts no supervisor (BONSAI_CTL): it "
                          "runs WITHOUT LIMITS", service, cmd, kind == ProgramKind::Go ? "Go" : "static"));
        }
      }
    }
  }
  if (changed) write_config(cfg_path, cfg);
  return changed;
}

// This program's path under the runtime's name (beside bonsaictl, as make and the
// package put it).
std::string self_runtime() {
  std::string p = real_path("/proc/self/exe");
  return p.substr(0, p.rfind('/') + 1) + "bonsai-oci-runtime";
}

// `bonsai-oci-runtime hook`: the CDI spec's createRuntime hook (run on the host by the
// runtime with the container's state on stdin). A device used without bonsai's runtime
// would run a static or Go command out of every cap's reach and out of `stat`'s sight:
// the start is refused with the reason instead (never silently uncapped). With the
// runtime (or `sv-exec` written in the command) the command is the supervisor and
// passes. Anything the hook cannot read lets the container start (fail open).
int oci_hook() {
  try {
    json state = json::parse(std::cin);
    std::string bundle = state.value("bundle", "");
    std::ifstream in(bundle + "/config.json");
    if (bundle.empty() || !in) return 0;
    json cfg = json::parse(in);
    const json& proc = cfg["process"];
    const json& env = proc["env"];
    if (!proc.contains("args") || !proc["args"].is_array() || proc["args"].empty() || !proc["args"][0].is_string())
      return 0;
    std::string cmd = proc["args"][0].get<std::string>();
    std::string ctl = env_get(env, "BONSAI_CTL");
    if (env_get(env, "BONSAI_SERVICE").empty() || cmd == ctl) return 0;
    std::string rootfs = cfg["root"].value("path", "rootfs");
    if (rootfs.empty() || rootfs[0] != '/') rootfs = bundle + "/" + rootfs;
    int pfd = open_command(rootfs, cmd, proc.value("cwd", "/"), env_get(env, "PATH"));
    if (pfd < 0) return 0;
    ProgramKind kind = program_kind(fmt::format("/proc/self/fd/{}", pfd).c_str(), GoLook::Sections);
    ::close(pfd);
    if (kind != ProgramKind::Static && kind != ProgramKind::Go) return 0;
    fmt::print(stderr, "bonsai: {} is a {} program: the bonsai.dev/service device alone cannot cap it (it would run "
               "WITHOUT LIMITS); run the container with bonsai's runtime (podman --runtime {}) or give the command as "
               "{} sv-exec {} ... (docs/reference/containers.md)\n", cmd, kind == ProgramKind::Go ? "Go" : "static",
               self_runtime(), ctl.empty() ? "/run/bonsai/sv/bonsaictl" : ctl, cmd);
    return 1;
  } catch (const std::exception& e) {
    say(fmt::format("hook: {} (the container starts)", e.what()));
    return 0;
  }
}

}  // namespace

int oci_runtime_main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "hook") == 0) return oci_hook();
  std::vector<std::string> a(argv, argv + argc);
  Call c = parse(a);
  if (c.cmd && (a[c.cmd] == "create" || a[c.cmd] == "run") && c.preserve >= 0 && c.preserve < 4096) {
    long fd_at = 3 + listen_fds() + c.preserve;
    int seg_fd = -1;
    bool edited = false;
    try {
      edited = edit_bundle(c, fd_at, &seg_fd);
    } catch (const std::exception& e) {
      say(fmt::format("cannot edit {}/config.json ({}): the container runs as its device alone makes it (a static "
                      "command or another user than the segment's runs WITHOUT LIMITS)", c.bundle, e.what()));
    }
    if (edited && seg_fd >= 0) {
      // The descriptor runc passes on as the container's fd `fd_at` (inheritable here).
      if (dup2(seg_fd, static_cast<int>(fd_at)) < 0) say(fmt::format("dup2: {}", std::strerror(errno)));
      ::close(seg_fd);
      std::string n = std::to_string(c.preserve + 1);
      if (!c.preserve_at) a.insert(a.begin() + static_cast<long>(c.cmd) + 1, {"--preserve-fds", n});
      else if (c.preserve_eq) a[c.preserve_at] = a[c.preserve_at].substr(0, a[c.preserve_at].find('=') + 1) + n;
      else a[c.preserve_at] = n;
    }
  }
  std::string rt = real_runtime();
  std::vector<char*> out;
  out.push_back(const_cast<char*>(rt.c_str()));
  for (size_t i = 1; i < a.size(); ++i) out.push_back(a[i].data());
  out.push_back(nullptr);
  execvp(rt.c_str(), out.data());
  say(fmt::format("cannot run {}: {}", rt, std::strerror(errno)));
  return 127;
}

}  // namespace bonsai::ctl
