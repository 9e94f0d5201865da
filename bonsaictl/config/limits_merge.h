// SPDX-License-Identifier: MIT
// Limits from two places made one: `run -l` rules over a file's, `set --merge` rules
// over those in force. A rule of the newer set replaces every older rule that shares a
// call with it (one call is never under two rules of one service).
#pragma once
#include <string>

#include "abi/limits_abi.h"

namespace bonsai::ctl {

// Rules of `extra` replace the rules of `base` that share a call with them; the
// others are kept. @return false (and `why`) if the result holds too many rules.
bool limits_merge(LimitSet& base, const LimitSet& extra, std::string& why);

}  // namespace bonsai::ctl
