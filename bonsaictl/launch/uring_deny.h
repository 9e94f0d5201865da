// SPDX-License-Identifier: MIT
// io_uring is never silent under a data limit: `run` (preload mode) denies it
// by default where that needs no no_new_privs -- run as root, the filter installed here,
// before the command (and a --user drop): everything the command starts inherits it --
// and elsewhere says at launch that io_uring users will not be limited and how to deny
// it. `--io-uring=allow|deny`, YAML `io_uring:` and an exported BONSAI_IO_URING keep the
// last word.
#pragma once
#include <string>

#include "abi/limits_abi.h"

namespace bonsai::ctl {

// Does any rule of `limits` limit a data call (bytes, or a call rate on a data call)?
bool limits_have_data(const LimitSet& limits);

// Loads, on this process, a seccomp filter answering io_uring_setup with ENOSYS, without
// no_new_privs (CAP_SYS_ADMIN needed). @return true, or false with `why`.
bool uring_deny_here(std::string& why);

}  // namespace bonsai::ctl
