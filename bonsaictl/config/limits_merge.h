// SPDX-License-Identifier: MIT
// Limits from two places made one: `run -l` rules over a file's, `set --merge` rules
// over those in force. The one statement of the semantics (also in bonsaictl(1) and
// docs/reference/config.md): every rule of the newer set is added as written; an older rule keeps
// what the newer ones leave it -- the calls and descriptor kinds no newer rule names --
// as one bucket at its own rate, and is dropped only when nothing is left. When what is
// left would be two pieces (a newer rule takes some of its calls on some kinds only),
// the merge is refused: two buckets would double the older rule's rate.
#pragma once
#include <string>

#include "abi/limits_abi.h"

namespace bonsai::ctl {

// `extra` merged over `base` (above). @return false (and `why`, one line) if what is left
// of a rule of `base` is not one rule, or the result holds too many rules.
bool limits_merge(LimitSet& base, const LimitSet& extra, std::string& why);

}  // namespace bonsai::ctl
