// SPDX-License-Identifier: MIT
// open(2) / close(2) without going through libc's (interposed) symbols: safe in a
// constructor, in an atfork child handler, before libc is set up.
#pragma once

namespace bonsai {

// @return fd or -errno.
long raw_open(const char* path, int flags, int mode) noexcept;
void raw_close(int fd) noexcept;

}  // namespace bonsai
