// SPDX-License-Identifier: MIT
// What `run` needs besides the segment: where libbonsai.so is, the LD_PRELOAD value
// (ours first, everything already there kept), whether a command can be limited at
// all (static and setuid programs ignore LD_PRELOAD), and merging -l rules into a
// file's limits.
#pragma once
#include <string>
#include <vector>

#include "abi/limits_abi.h"

namespace bonsai::ctl {

// BONSAI_LIB, else libbonsai.so next to this bonsaictl, else ../lib/libbonsai.so.
// Throws CtlError (exit 1) if none exists.
std::string library_find();

// `lib` in front of `existing` (':' or ' ' separated); other entries kept in order,
// an earlier copy of `lib` dropped.
std::string preload_value(const std::string& lib, const std::string& existing);

// Resolves `cmd` like execvp (PATH search when it has no '/'). @return "" if not found.
std::string command_resolve(const std::string& cmd);

// @return a plain warning if `path` cannot be limited (setuid/setgid, statically
// linked; for a #! script, its interpreter), else "".
std::string preload_warning(const std::string& path);

// Rules of `extra` replace the rules of `base` that share a call with them; the
// others are kept. @return false (and `why`) if the result holds too many rules.
bool limits_merge(LimitSet& base, const LimitSet& extra, std::string& why);

}  // namespace bonsai::ctl
