// SPDX-License-Identifier: MIT
// The service segment as a descriptor handed down the process tree:
// `bonsaictl run` opens it and passes BONSAI_SHM_FD (the number) and
// BONSAI_SHM_UID (its owner); a child that changed uid attaches through the
// descriptor without a lookup by name or a permission check. The library keeps the
// descriptor open at a high number (close-on-exec while the image runs); the exec
// wrappers make it inheritable and re-open the segment by name if the application
// closed it. Raw system calls, no allocation, no logging.
#pragma once
#include <sys/stat.h>

namespace bonsai {

// The values of BONSAI_SHM_FD and BONSAI_SHM_UID (may be null), read by the caller
// before shm_attach; parsed now (the strings may be overwritten later). Untrusted:
// every use is checked.
void shm_fd_configure(const char* fd_value, const char* uid_value) noexcept;

// The segment owner's uid: BONSAI_SHM_UID if valid, else the effective uid.
unsigned shm_owner_uid() noexcept;

// The uid that `uid` (a uid of the parent user namespace: the host's, for a rootless
// container) has in this process's user namespace, by /proc/self/uid_map; `uid` itself
// outside a user namespace or when it is not mapped. A file the host's `uid` owns shows
// this owner in here (docs/reference/containers.md). Raw calls; attach time only.
unsigned shm_uid_here(unsigned uid) noexcept;

// BONSAI_SHM_FD if it is the segment `path` of `uid`: open read-write, a regular,
// private file owned by `uid`, the very file `path` names (device and inode).
// @return the descriptor, or -1.
int shm_inherited_fd(const char* path, unsigned uid) noexcept;

// Keeps the attached segment's descriptor (takes ownership; `st` its fstat).
void shm_keep_fd(int fd, const struct stat& st, const char* path) noexcept;

// The kept descriptor, or -1.
int shm_kept_fd() noexcept;

// True if `fd` is the kept descriptor and still the segment: a close() of it (a
// "close every descriptor" loop) is skipped, so a child that closes everything and
// changes uid still finds the service. One compare unless fd is that number.
namespace detail {
extern int g_kept_fd;
bool kept_fd_is_segment() noexcept;
}  // namespace detail
inline bool shm_fd_protected(int fd) noexcept {
  return fd == detail::g_kept_fd && fd >= 0 && detail::kept_fd_is_segment();
}

// For an exec: the kept descriptor if it is still the segment, else the segment
// re-opened by name (`opened` true: close it if the exec fails). Writes no global
// (safe in a vfork()ed child). @return the descriptor or -1.
int shm_fd_for_exec(bool& opened) noexcept;

// Lowest number for the kept descriptor under a soft RLIMIT_NOFILE of `soft`
// (bonsaictl run uses the same rule).
inline int shm_fd_floor(unsigned long soft) noexcept {
  if (soft > 1010) return 1000;
  return soft > 8 ? static_cast<int>(soft * 3 / 4) : 3;
}

// Parses a decimal in [0, max]. @return it, or -1.
long shm_parse_uint(const char* s, long max) noexcept;

}  // namespace bonsai
