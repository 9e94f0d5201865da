// SPDX-License-Identifier: MIT
// The io_uring guard: io_uring moves data with no system call a
// wrapper sees, so BONSAI_IO_URING=deny makes io_uring_setup fail with ENOSYS in
// this process and everything it starts (a seccomp filter is inherited across fork
// and exec), and liburing users fall back to plain read/write, which are limited.
//
// Installed once, at set-up (limiter_init_once), through libseccomp, which
// allocates: never call this from a signal handler or a fast path. Without
// CAP_SYS_ADMIN the kernel requires no_new_privs for a filter: from then on no
// program of the tree gains privileges by exec (setuid/setgid bits and file
// capabilities are ignored) -- why the guard is opt-in. Fails open: on any
// problem it says so once on stderr and the process runs on with io_uring allowed.
#pragma once

namespace bonsai {

enum class UringPolicy { Allow, Deny };

// BONSAI_IO_URING's value: "deny" or "allow"; nullptr or "" is allow. Anything else
// is allow, with `*bad` set to true (the caller warns).
UringPolicy uring_policy_parse(const char* value, bool* bad) noexcept;

// Reads BONSAI_IO_URING and installs the filter if it says deny (and io_uring_setup
// does not already fail with ENOSYS here: a parent's filter, or a kernel without
// io_uring). @return true if io_uring_setup is denied in this process afterwards.
bool uring_guard_from_env() noexcept;

}  // namespace bonsai
