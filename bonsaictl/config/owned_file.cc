// SPDX-License-Identifier: MIT
// Directories and files only their owner can change (see owned_file.h).
#include "config/owned_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include "segment/target_user.h"

namespace bonsai::ctl {

std::string owned_problem(const std::string& path, uid_t uid, unsigned mode, uid_t owner, bool private_mode) {
  unsigned bad = private_mode ? 0077u : 0022u;
  // A configuration file root owns is as safe as the user's own (root can change
  // anything anyway): /etc/bonsai/bonsai.yaml for a user's agent. A private file (a
  // password) must be the user's.
  bool owner_ok = uid == owner || (!private_mode && uid == 0);
  if (owner_ok && !(mode & bad)) return {};
  if (!owner_ok)
    return fmt::format("{} belongs to {}, not to {} (the user that acts on it): another user could change it; "
                       "chown it to {}{}", path, user_text(uid), user_text(owner), user_text(owner),
                       private_mode ? " and chmod 600 it" : "");
  return fmt::format("{} has mode {:04o}: group or others may {} it; chmod {} it", path, mode & 07777,
                     private_mode ? "read or change" : "change", private_mode ? "600" : "go-w");
}

int owned_dir_open(const std::string& dir, uid_t owner, bool create, std::string& why) {
  if (create && mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return why = fmt::format("cannot create {}: {}", dir, std::strerror(errno)), -1;
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) {
    int e = errno;
    if (e == ENOENT) return why = fmt::format("{} does not exist", dir), -1;
    return why = fmt::format("{} is not a directory ({}): someone put it there in bonsai's way; remove it (as root) "
                             "and try again", dir, std::strerror(e)),
           -1;
  }
  struct stat st {};
  if (fstat(dfd, &st) != 0 || st.st_uid != owner || (st.st_mode & 0077)) {
    why = fmt::format("{} belongs to uid {} with mode {:04o}, not to uid {} with mode 0700: another user may have made "
                      "it to squat it; remove it (as root) and try again",
                      dir, st.st_uid, st.st_mode & 07777, owner);
    close(dfd);
    return -1;
  }
  return dfd;
}

std::string owned_file_read(int dirfd, const std::string& name, uid_t owner, bool private_mode, size_t max_bytes,
                            std::string& text, int* errno_out) {
  text.clear();
  if (errno_out) *errno_out = 0;
  int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;  // a FIFO planted there does not hang us
  int fd = dirfd >= 0 ? openat(dirfd, name.c_str(), flags) : open(name.c_str(), flags);
  if (fd < 0) {
    int e = errno;
    if (errno_out) *errno_out = e;
    if (e == ELOOP) return fmt::format("{} is a symbolic link: refused (name the file itself)", name);
    return fmt::format("cannot open {}: {}", name, std::strerror(e));
  }
  struct stat st {};
  std::string why;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) why = fmt::format("{} is not a regular file", name);
  else why = owned_problem(name, st.st_uid, st.st_mode, owner, private_mode);
  if (why.empty() && static_cast<uint64_t>(st.st_size) > max_bytes)
    why = fmt::format("{} has more than {} bytes", name, max_bytes);
  while (why.empty()) {
    char buf[16384];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) why = fmt::format("cannot read {}: {}", name, std::strerror(errno));
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_bytes) why = fmt::format("{} has more than {} bytes", name, max_bytes);
  }
  close(fd);
  if (!why.empty()) text.clear();
  return why;
}

Config yaml_load_owned(const std::string& path, std::vector<Diag>& diags) {
  std::string text;
  if (std::string why = owned_file_read(-1, path, geteuid(), false, kMaxConfigBytes, text); !why.empty()) {
    diags.push_back(Diag{path, 0, 0, why + " (an agent takes its configuration only from its own user's files)"});
    return Config{path, {}};
  }
  size_t before = diags.size();
  Config cfg = yaml_load_string(text, path, diags);
  if (diags.size() == before) fleet_files_check(cfg, diags);
  return cfg;
}

std::string owned_password_read(const char* key, const std::string& path, std::string& why) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return why = errno == ELOOP ? fmt::format("{} {} is a symbolic link: refused (name the file itself)", key, path)
                                : fmt::format("cannot open {} {}: {}", key, path, std::strerror(errno)),
           "";
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return why = fmt::format("{} {} is not a regular file", key, path), "";
  }
  if (std::string p = owned_problem(path, st.st_uid, st.st_mode, geteuid(), true); !p.empty()) {
    close(fd);
    return why = fmt::format("{} {}: refused, nothing sent", key, p), "";
  }
  char buf[513];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n < 0) return why = fmt::format("cannot read {} {}", key, path), "";
  std::string pw(buf, static_cast<size_t>(n));
  if (size_t nl = pw.find_first_of("\r\n"); nl != std::string::npos) pw.resize(nl);
  if (pw.empty()) why = fmt::format("{} {} is empty", key, path);
  return pw;
}

}  // namespace bonsai::ctl
