// SPDX-License-Identifier: MIT
// The files the library writes at exit (BONSAI_STATS, BONSAI_COMPRESS_STATS, any
// later one): one helper, so that no path given to the library can block the host
// process or redirect its writes through a link someone else planted.
//
// out_file_append opens the file with O_WRONLY|O_APPEND|O_CREAT|O_NOFOLLOW|O_NONBLOCK|
// O_CLOEXEC, mode 0600 (before umask), relative to an O_PATH descriptor of its
// directory, and refuses, with one warning on stderr:
//   - a final symbolic link (never followed), a directory, a device, a socket;
//   - a FIFO with no reader (the non-blocking open fails at once);
//   - an existing file owned by another user (neither us nor root) when the directory
//     can be written by others (group/other-writable, or owned by another user);
//   - a regular file with several hard links in such a directory.
// Regular files and FIFOs (a collector reading a named pipe) are written. The write
// is bounded: a destination that is full (EAGAIN) is retried for at most
// kOutWriteBudgetMs in total, then the rest of the line is dropped with a warning.
// Raw system calls only: no allocation, no interposed symbol, errno preserved.
#pragma once
#include <cstddef>

namespace bonsai {

inline constexpr size_t kOutPathMax = 1024;   // bytes of a path setting, NUL included
inline constexpr int kOutWriteBudgetMs = 250; // longest a full destination may hold the exit
inline constexpr int kOutPollMs = 10;         // one wait for room in a full destination

// Copies a path setting (the value of environment variable `what`, or null) into
// `dst` at start-up: the host may later overwrite its environment (nginx writes its
// process title over it). A relative path is made absolute against the current
// directory now, so that a later chdir() does not move the file.
// @return true if `dst` holds a path; false if unset or empty, or (warned) too long.
// Then checks it as out_path_probe does.
bool out_path_copy(const char* what, const char* value, char (&dst)[kOutPathMax]) noexcept;

// Whether `dst` can be written as far as can be known at start-up (absent, its directory
// must take a new file: exist, enter, write; one that exists is judged at exit): if not, says so once on
// stderr now -- a program may close its stderr before the library's exit hook writes --
// and empties `dst` (nothing is attempted at exit). @return whether `dst` is kept.
bool out_path_probe(const char* what, char (&dst)[kOutPathMax]) noexcept;

// Appends `len` bytes to the file named by `path` ("%p" becomes the pid), as above,
// in one write where the destination takes it (lines of processes appended to one
// regular file never interleave). `what` names the setting in the warning.
// @return true if every byte was written.
bool out_file_append(const char* what, const char* path, const char* buf, size_t len) noexcept;

}  // namespace bonsai
