// SPDX-License-Identifier: MIT
// What `run` needs besides the segment: where libbonsai.so is, the LD_PRELOAD value
// (ours first, everything already there kept), the segment descriptor
// and the io_uring choice handed down (what kind of program it is: launch_kind.h; merging
// -l rules into a file's limits: config/limits_merge.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>


namespace bonsai::ctl {

// BONSAI_LIB (made absolute: children may change directory), else libbonsai.so next
// to this bonsaictl, else ../lib/libbonsai.so. Throws CtlError (exit 1) if none exists.
std::string library_find();

// What LD_PRELOAD names for `lib` (docs/reference/libc.md): when the folder holding it
// has the builds laid out for the loaders to choose -- DIR/$LIB/libbonsai.so the musl
// build (a folder literally named `$LIB`), DIR/lib/x86_64-linux-gnu, DIR/lib64 and
// DIR/lib the glibc one -- the entry DIR/$LIB/libbonsai.so, `$LIB` as written: glibc's
// loader expands it to its own library folder's name and takes the glibc build, musl's
// does not and takes the musl build, at every exec of the tree, whatever executes what.
// Else `lib` itself.
std::string preload_entry(const std::string& lib);

// `lib` in front of `existing` (':' or ' ' separated); other entries kept in order,
// an earlier copy of `lib` dropped.
std::string preload_value(const std::string& lib, const std::string& existing);

// `existing` without any libbonsai.so entry (supervised trees: the filter charges).
std::string preload_without_bonsai(const std::string& existing);

// `stat` lists this process, about to exec the program at `path`, NOT limited under the
// service (`flags`: kSlotUnlimited, kSlotForeignLibc). Best effort.
class Segment;
void mark_not_limited(Segment* seg, const char* path, uint32_t flags);

// Resolves `cmd` like execvp (PATH search when it has no '/'). @return "" if not found.
std::string command_resolve(const std::string& cmd);

// The descriptor a launched tree inherits (BONSAI_SHM_FD): the segment at `path`
// opened read-write, inheritable, at a high number (shm_fd_floor). Checked: a
// regular file owned by this euid, private. @return fd, or -1 with `why` set.
int segment_fd_handoff(const std::string& path, std::string& why);

// @return a warning if a child that drops privileges could not follow the service
// (run as root with a library other users cannot read), else "".
std::string privdrop_warning(const std::string& lib, unsigned euid);

// BONSAI_IO_URING for the launched tree: `flag` (--io-uring) wins over `file` (the
// service's `io_uring:`); both empty leaves the inherited value alone. "deny" makes
// the library deny io_uring_setup (ENOSYS) in the tree. @return false (nothing set)
// if the value is neither deny nor allow.
bool io_uring_export(const std::string& flag, const std::string& file);

}  // namespace bonsai::ctl
