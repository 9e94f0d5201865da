// SPDX-License-Identifier: MIT
// The trusted copy of shares (docs/reference/shares.md): the host capacity `load` installed and the
// rules of every service under it, as `load` and `set` left them, in the file `shares` of
// the user's trusted directory (config/fleet_trusted.h fleet_dir(): 0700, owned, no
// symlink). `set` checks a change against it as `check` checks a file -- the rates under
// each capacity rule add up to at most it -- never against the host segment, which the
// tenants can write.
#pragma once
#include <map>
#include <string>

#include "abi/limits_abi.h"

namespace bonsai::ctl {

struct SharesTrusted {
  bool has_capacity = false;
  LimitSet capacity{};
  std::map<std::string, LimitSet> services;  // each service's rules as installed
};

// Reads the copy. @return 1 with `out` filled, 0 when there is none, -1 with `why` when
// it cannot be trusted or read.
int shares_trusted_read(SharesTrusted& out, std::string& why);

// Writes the copy (atomically). @return "" or why not (one line).
std::string shares_trusted_write(const SharesTrusted& t);

// What `check` would say of the service `service` with the rules `next`, beside the other
// services of `t` under its capacity: "" or the reason (one line).
std::string shares_trusted_problem(const SharesTrusted& t, const std::string& service, const LimitSet& next);

}  // namespace bonsai::ctl
