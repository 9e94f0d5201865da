// SPDX-License-Identifier: MIT
// Files a privileged component takes configuration from (the fleet agent, the
// protect-agent, `stat --fleet`): only those its own user owns and nobody else can
// write or replace. Each is opened with O_NOFOLLOW and checked on what was opened
// (fstat), so there is no window between the check and the use. Never reads a
// segment or anything a tenant can write.
#pragma once
#include <cstddef>
#include <string>
#include <sys/types.h>
#include <vector>

#include "config/yaml_load.h"

namespace bonsai::ctl {

// Opens (creating it with mode 0700 when `create` and absent) the directory `dir`,
// refusing one that is a symlink, not a directory, not owned by `owner` or with any
// group or other bit. @return its descriptor (O_DIRECTORY), or -1 with `why` (one line:
// the path, the owner and mode found, what to do).
int owned_dir_open(const std::string& dir, uid_t owner, bool create, std::string& why);

// Reads the regular file `name` (openat(dirfd, ...) when dirfd >= 0, else the path)
// whole, at most `max_bytes`, refusing a symlink, a file not owned by `owner` (or root,
// unless `private_mode`), or one
// that group or others may write (`private_mode`: any group or other bit). @return ""
// with `text` filled, or why not (one line). `errno_out`: the open's errno (ENOENT: absent).
std::string owned_file_read(int dirfd, const std::string& name, uid_t owner, bool private_mode, size_t max_bytes,
                            std::string& text, int* errno_out = nullptr);

// What is wrong with (uid, mode) for a file `path` that must be `owner`'s (or root's,
// unless `private_mode`), not writable by group or others (and with `private_mode` no
// group or other bit at all): "" or one line.
std::string owned_problem(const std::string& path, uid_t uid, unsigned mode, uid_t owner, bool private_mode);

// yaml_load_file for an agent: the file must be the effective user's (or root's), not
// writable by group or others, no symlink (read through the descriptor those checks
// were made on).
Config yaml_load_owned(const std::string& path, std::vector<Diag>& diags);

// A password the fleet agent sends (`key`: "password_file" or "sentinel_password_file",
// named in the messages): the first line (at most 512 bytes) of `path`, which must be a
// regular file of the effective user with no group or other bit, opened without
// following a symlink and checked on what was opened -- read before anything is
// connected to, so a file another user can write or point it at is refused with
// nothing sent. @return the password, or "" with `why` (one line).
std::string owned_password_read(const char* key, const std::string& path, std::string& why);

}  // namespace bonsai::ctl
