// SPDX-License-Identifier: MIT
// The CDI spec of a user's services (see cdi_spec.h, docs/reference/containers.md).
#include "launch/cdi_spec.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

#include "abi/program_kind.h"
#include "base/diag.h"
#include "launch/run_env.h"
#include "segment/shm_client.h"
#include "shm/shm_name.h"
#include "segment/target_user.h"

namespace bonsai::ctl {
namespace {

// Where a device puts things in the container. /run/bonsai/$LIB/libbonsai.so is what
// LD_PRELOAD names; the supervisor and what it loads sit apart in /run/bonsai/sv.
constexpr const char* kInDir = "/run/bonsai";
constexpr const char* kSvDir = "/run/bonsai/sv";
constexpr const char* kLayout[] = {"$LIB", "lib/x86_64-linux-gnu", "lib64", "lib"};

struct Mount {
  std::string host, in;
  bool rw = false, exec = true;
};

bool is_file(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string real(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

std::string self_dir() {
  std::string p = real("/proc/self/exe");
  return p.substr(0, p.rfind('/'));
}

std::string base_name(const std::string& p) { return p.substr(p.rfind('/') + 1); }

// A YAML double-quoted scalar (JSON's escapes are YAML's).
std::string q(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  return out + "\"";
}

// The marker line `cdi_refresh` looks for (uid and prefix: one spec per pair).
std::string marker() {
  return fmt::format("# bonsaictl cdi generate: uid={} prefix={}", ctl_uid(), q(shm_prefix()));
}

// The library's builds, as the $LIB layout (docs/reference/libc.md) under /run/bonsai.
std::vector<Mount> library_mounts(std::vector<std::string>& notes) {
  std::string lib = library_find();
  std::string entry = preload_entry(lib);
  std::vector<Mount> out;
  const std::string tail = "/$LIB/libbonsai.so";
  if (entry.size() > tail.size() && entry.compare(entry.size() - tail.size(), tail.size(), tail) == 0) {
    std::string dir = entry.substr(0, entry.size() - tail.size());
    for (const char* d : kLayout)
      out.push_back({real(dir + "/" + d + "/libbonsai.so"), fmt::format("{}/{}/libbonsai.so", kInDir, d)});
  } else {  // a lone glibc build: every glibc finds it; a musl program's loader finds nothing
    notes.push_back(fmt::format("{} has no musl build beside it (docs/reference/libc.md): programs of musl images (Alpine) "
                                "fail to start with the device",
                                lib));
    for (const char* d : kLayout)
      if (std::strcmp(d, "$LIB") != 0) out.push_back({lib, fmt::format("{}/{}/libbonsai.so", kInDir, d)});
  }
  return out;
}

// The supervisor: build/cdi/bonsaictl (or the installed PKGLIBDIR/cdi/bonsaictl), beside
// the library, else beside bonsaictl: one static program (Makefile), mounted alone: no
// library of the host's goes into a container. Empty (and a note) if there is none.
std::vector<Mount> supervisor_mounts(std::string& ctl_in, std::vector<std::string>& notes) {
  std::string lib = library_find();
  std::vector<std::string> places{lib.substr(0, lib.rfind('/')) + "/cdi/bonsaictl", self_dir() + "/cdi/bonsaictl"};
  std::string sv;
  for (const auto& p : places)
    if (is_file(p)) {
      sv = real(p);
      break;
    }
  if (sv.empty()) {
    notes.push_back(fmt::format("no supervisor for containers ({} missing): static and Go programs in containers "
                                "are NOT limited",
                                places[0]));
    return {};
  }
  if (program_kind(sv.c_str(), GoLook::Notes) != ProgramKind::Static) {
    notes.push_back(fmt::format("{} is not a static program (make builds it so): static and Go programs in "
                                "containers are NOT limited",
                                sv));
    return {};
  }
  ctl_in = std::string(kSvDir) + "/bonsaictl";
  return {{sv, ctl_in}};
}

void put_mount(std::string& y, const Mount& m, const char* indent) {
  y += fmt::format("{}- hostPath: {}\n{}  containerPath: {}\n{}  options: [{}]\n", indent, q(m.host), indent,
                   q(m.in), indent,
                   m.rw ? "\"bind\", \"rw\", \"nosuid\", \"nodev\", \"noexec\""
                        : (m.exec ? "\"bind\", \"ro\", \"nosuid\", \"nodev\"" : "\"bind\", \"ro\", \"nosuid\", \"nodev\", \"noexec\""));
}

std::string segment_name(const std::string& path) { return "/dev/shm/" + base_name(path); }

// ---- The links a spec mounts ----
// A device never mounts /dev/shm/NAME itself: once its owner removes that name (or if the
// owner is another user than the spec's writer, at any time) anyone may put a symbolic
// link or another file there, and the runtime, often root, would mount what it leads
// to. It mounts a hard link to the very file checked, in a folder of the spec writer's
// (link_dir): nobody else can replace an entry there, and a link names an inode, not a
// path. The links of services gone are removed when a spec is written or refreshed.

// /dev/shm/<prefix>bonsai-cdi.<euid>: on the segments' file system (a hard link cannot
// cross one), owned by the writer, writable by it alone.
std::string link_dir() { return fmt::format("/dev/shm/{}bonsai-cdi.{}", shm_prefix(), geteuid()); }

// Opens (making it if need be) the link folder; refuses one another user made first.
int link_dir_open() {
  std::string dir = link_dir();
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    runtime_error(fmt::format("cannot make {}: {}", dir, std::strerror(errno)));
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
    struct stat lst;
    std::string who = lstat(dir.c_str(), &lst) == 0 ? user_text(lst.st_uid) : "?";
    if (fd >= 0) ::close(fd);
    runtime_error(fmt::format("{} is not a folder of yours writable by you alone (made by {}); devices are mounted "
                              "from there, so it is not used. To clear it, its owner or root removes it: rm -r {}",
                              dir, who, dir));
  }
  return fd;
}

// Links `fd` (an open, checked segment) into the folder as `name`, replacing the old link.
void link_segment(int dir_fd, int fd, const std::string& name) {
  std::string tmp = fmt::format(".{}.{}.tmp", name, getpid());
  std::string proc = fmt::format("/proc/self/fd/{}", fd);
  ::unlinkat(dir_fd, tmp.c_str(), 0);
  if (::linkat(AT_FDCWD, proc.c_str(), dir_fd, tmp.c_str(), AT_SYMLINK_FOLLOW) != 0 ||
      ::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
    int e = errno;
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    runtime_error(fmt::format("cannot link {} into {}: {}", name, link_dir(), std::strerror(e)));
  }
}

// Removes the links of ctl_uid()'s services not in `keep`.
void links_prune(int dir_fd, const std::vector<std::string>& keep) {
  DIR* d = fdopendir(::dup(dir_fd));
  if (!d) return;
  std::vector<std::string> gone;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    std::string_view s = shm_service_of_file(n, shm_prefix(), ctl_uid());
    if (!s.empty() && std::find(keep.begin(), keep.end(), std::string(s)) == keep.end()) gone.push_back(n);
  }
  closedir(d);
  for (const auto& n : gone) ::unlinkat(dir_fd, n.c_str(), 0);
}

// The services that may be devices: those whose segment passes every check bonsaictl
// makes before using one (Segment::open: O_NOFOLLOW, a regular file, owner ctl_uid(),
// mode 0600, size, header): never a name alone. Each is linked (above) from the file
// that was checked. `notes` gets the names refused and why.
std::vector<std::string> device_services(std::vector<std::string>& notes) {
  std::vector<std::string> out;
  int dir_fd = -1;
  for (const auto& s : services_list()) {
    std::unique_ptr<Segment> seg;
    try {
      seg = Segment::open(s, false);
    } catch (const CtlError& e) {
      notes.push_back(fmt::format("no device for '{}': {}", s, e.what()));
      continue;
    }
    if (dir_fd < 0) dir_fd = link_dir_open();
    try {
      link_segment(dir_fd, seg->fd(), base_name(seg->path()));
    } catch (const CtlError&) {
      ::close(dir_fd);
      throw;
    }
    out.push_back(s);
  }
  if (dir_fd < 0 && ::access(link_dir().c_str(), F_OK) == 0) dir_fd = link_dir_open();
  if (dir_fd >= 0) {
    links_prune(dir_fd, out);
    ::close(dir_fd);
  }
  return out;
}

// The device's name: the spec writer's own services keep theirs; another user's (root's
// `--user NAME`) carry its uid after a colon, which no service name holds, so that the
// same name of two users never makes two devices of one name (docs/reference/containers.md).
std::string device_name(const std::string& service) {
  if (ctl_uid() == geteuid()) return service;
  return fmt::format("{}:u{}", service, ctl_uid());
}

}  // namespace

std::string cdi_device_name(const std::string& service) { return device_name(service); }

std::string cdi_spec_text(const std::vector<std::string>& services, std::vector<std::string>& notes) {
  std::vector<Mount> common = library_mounts(notes);
  std::string ctl_in;
  for (auto& m : supervisor_mounts(ctl_in, notes)) common.push_back(std::move(m));
  // Shares (docs/reference/shares.md): the user's host segment is not mounted. It holds the borrowing
  // state of all the user's services, which a container of one of them could rewrite; the
  // container's processes run at their rules' guaranteed rates, without borrowing.
  std::string y = marker() + "\n";
  y += "# Written by `bonsaictl cdi generate`; `bonsaictl load` and `rm` rewrite it (docs/reference/containers.md).\n";
  y += "cdiVersion: \"0.5.0\"\n";
  y += fmt::format("kind: {}\n", kCdiKind);
  y += "devices:\n";
  for (const auto& s : services) {
    y += fmt::format("  - name: {}\n    containerEdits:\n      env:\n        - {}\n", q(device_name(s)),
                     q("BONSAI_SERVICE=" + s));
    y += "      mounts:\n";
    std::string seg = segment_path(s);
    put_mount(y, {link_dir() + "/" + base_name(seg), segment_name(seg), true, false}, "        ");
  }
  y += "containerEdits:\n  env:\n";
  y += fmt::format("    - {}\n", q(fmt::format("LD_PRELOAD={}/$LIB/libbonsai.so", kInDir)));
  // The segment names the host's uid: a container's root (or any uid) looks for it.
  y += fmt::format("    - {}\n", q(fmt::format("BONSAI_SHM_UID={}", ctl_uid())));
  if (!shm_prefix().empty()) y += fmt::format("    - {}\n", q("BONSAI_SHM_PREFIX=" + shm_prefix()));
  if (!ctl_in.empty()) y += fmt::format("    - {}\n", q("BONSAI_CTL=" + ctl_in));
  y += "  mounts:\n";
  for (const auto& m : common) put_mount(y, m, "    ");
  // bonsai-oci-runtime's hook: a static or Go command started with the device but without
  // the runtime is refused with the reason rather than run silently uncapped.
  if (std::string rt = self_dir() + "/bonsai-oci-runtime"; !ctl_in.empty() && ::access(rt.c_str(), X_OK) == 0)
    y += fmt::format("  hooks:\n    - hookName: createRuntime\n      path: {}\n      args: [\"bonsai-oci-runtime\", "
                     "\"hook\"]\n", q(rt));
  return y;
}

std::vector<std::string> cdi_docker_args(const std::string& service, std::vector<std::string>& notes) {
  std::vector<std::string> refused;
  std::vector<std::string> services = device_services(refused);
  if (std::find(services.begin(), services.end(), service) == services.end()) {
    std::string why;
    for (const auto& n : refused)
      if (n.find("'" + service + "'") != std::string::npos) why = ": " + n;
    runtime_error(fmt::format("no service '{}' of {} to give a container (see bonsaictl ls){}", service,
                              user_text(ctl_uid()), why));
  }
  std::string seg = segment_path(service);
  std::vector<Mount> mounts{{link_dir() + "/" + base_name(seg), segment_name(seg), true, false}};
  for (auto& m : library_mounts(notes)) mounts.push_back(std::move(m));
  std::string ctl_in;
  for (auto& m : supervisor_mounts(ctl_in, notes)) mounts.push_back(std::move(m));
  std::vector<std::string> out;
  // --mount, not -v: a `:` in a path cannot split it. Docker's binds take no nosuid/nodev.
  for (const auto& m : mounts)
    out.push_back(fmt::format("--mount=type=bind,source={},target={}{}", m.host, m.in, m.rw ? "" : ",readonly"));
  out.push_back("--env=BONSAI_SERVICE=" + service);
  out.push_back(fmt::format("--env=LD_PRELOAD={}/$LIB/libbonsai.so", kInDir));
  out.push_back(fmt::format("--env=BONSAI_SHM_UID={}", ctl_uid()));
  if (!shm_prefix().empty()) out.push_back("--env=BONSAI_SHM_PREFIX=" + shm_prefix());
  if (!ctl_in.empty()) out.push_back("--env=BONSAI_CTL=" + ctl_in);
  return out;
}

namespace {

// Is `path` a spec `cdi generate` wrote for ctl_uid() and shm_prefix()?
bool ours(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (!f) return false;
  char line[512] = {};
  bool yes = std::fgets(line, sizeof line, f) && std::string(line) == marker() + "\n";
  std::fclose(f);
  return yes;
}

void write_atomically(const std::string& path, const std::string& text) {
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  if (dir.empty()) dir = "/";
  std::string tmp = fmt::format("{}/.{}.{}.tmp", dir, base_name(path), getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) runtime_error(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  // Podman reads the spec as whoever runs it: readable by all (it holds paths only).
  fchmod(fd, 0644);
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      runtime_error(fmt::format("cannot write {}: {}", tmp, std::strerror(e)));
    }
    off += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(e)));
  }
}

// What the first line of `path` says of whose spec it is, for a refusal.
std::string spec_whose(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "it is not a regular file";
  FILE* f = std::fopen(path.c_str(), "re");
  char line[512] = {};
  bool got = f && std::fgets(line, sizeof line, f);
  if (f) std::fclose(f);
  std::string l = got ? std::string(line) : "";
  const std::string head = "# bonsaictl cdi generate: ";
  if (l.compare(0, head.size(), head) != 0) return "it is not a spec bonsaictl cdi generate wrote";
  if (!l.empty() && l.back() == '\n') l.pop_back();
  return "it is the spec of " + l.substr(head.size());
}

// A spec file is replaced only by the spec of the same user and prefix: one user's
// generate (or load) never overwrites another's, nor another prefix's, nor a file it
// did not write. Exit 2, nothing written.
void output_check(const std::string& output) {
  struct stat st;
  if (lstat(output.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    runtime_error(fmt::format("cannot write {}: {}", output, std::strerror(errno)));
  }
  if (S_ISREG(st.st_mode) && ours(output)) return;
  usage_error(fmt::format("{} is not the spec of {} under prefix {} ({}); not overwritten: give another --output",
                          output, user_text(ctl_uid()), q(shm_prefix()), spec_whose(output)));
}

[[noreturn]] void no_devices(const std::string& what, const std::vector<std::string>& notes) {
  std::string m = fmt::format("no services of {} to make devices of (see bonsaictl ls){}", user_text(ctl_uid()), what);
  for (const auto& n : notes) m += "; " + n;
  runtime_error(m);
}

}  // namespace

size_t cdi_generate(const std::string& output, std::vector<std::string>& notes) {
  if (output != "-") output_check(output);
  std::vector<std::string> services = device_services(notes);
  if (output == "-") {
    if (services.empty()) no_devices("", notes);
    std::string y = cdi_spec_text(services, notes);
    std::fwrite(y.data(), 1, y.size(), stdout);
    return services.size();
  }
  if (services.empty()) {
    // Say what was done to the file: an old spec of ours removed (its devices are gone),
    // one that is not ours left alone, or none there.
    std::string what;
    if (ours(output)) {
      what = ::unlink(output.c_str()) == 0 ? fmt::format("; removed the spec {} (it had devices of services now gone)", output)
                                           : fmt::format("; could not remove the old spec {}: {}", output, std::strerror(errno));
    } else if (::access(output.c_str(), F_OK) == 0) {
      what = fmt::format("; {} is not a spec bonsai wrote: left as it is", output);
    } else {
      what = fmt::format("; no spec written to {}", output);
    }
    no_devices(what, notes);
  }
  if (size_t slash = output.rfind('/'); slash != std::string::npos && slash > 0)
    ::mkdir(output.substr(0, slash).c_str(), 0755);  // /var/run/cdi may not exist yet
  write_atomically(output, cdi_spec_text(services, notes));
  return services.size();
}

std::vector<std::string> cdi_refresh() {
  std::vector<std::string> out, seen;
  for (const char* d : kCdiDirs) {
    DIR* dir = opendir(d);
    if (!dir) continue;
    std::vector<std::string> files;
    while (dirent* e = readdir(dir)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n[0] != '.' && n.compare(n.size() - 5, 5, ".yaml") == 0) files.push_back(std::string(d) + "/" + n);
    }
    closedir(dir);
    for (const auto& f : files) {
      std::string r = real(f);
      bool dup = false;
      for (const auto& s : seen) dup = dup || s == r;
      struct stat st;
      if (dup || lstat(f.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || !ours(f)) continue;
      seen.push_back(r);
      try {
        std::vector<std::string> notes;
        if (services_list().empty()) {
          ::unlink(f.c_str());
          out.push_back(fmt::format("removed {} (no services left)", f));
        } else {
          size_t n = cdi_generate(f, notes);
          out.push_back(fmt::format("rewrote {} ({} device{})", f, n, n == 1 ? "" : "s"));
        }
      } catch (const CtlError& e) {
        out.push_back(fmt::format("cannot rewrite {}: {}", f, e.what()));
      }
    }
  }
  // The links of specs not tracked here (--output elsewhere, -): a removed service's goes,
  // a replaced one's follows the new segment.
  if (::access(link_dir().c_str(), F_OK) == 0) {
    try {
      std::vector<std::string> notes;
      device_services(notes);
    } catch (const CtlError& e) {
      out.push_back(fmt::format("cannot refresh the links in {}: {}", link_dir(), e.what()));
    }
  }
  return out;
}

}  // namespace bonsai::ctl
