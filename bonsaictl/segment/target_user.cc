// SPDX-License-Identifier: MIT
// Whose services bonsaictl addresses (see target_user.h).
#include "segment/target_user.h"

#include <cstdlib>
#include <fmt/core.h>
#include <pwd.h>
#include <unistd.h>

#include "base/diag.h"

namespace bonsai::ctl {

namespace {
// `--user NAME` (root only): whose services every command addresses.
struct TargetUser {
  bool set = false;
  unsigned uid = 0, gid = 0;
  std::string name;
};
TargetUser g_target;
}  // namespace

void ctl_target_user(unsigned uid, unsigned gid, const std::string& name) { g_target = {true, uid, gid, name}; }
bool ctl_other_user() { return g_target.set && g_target.uid != static_cast<unsigned>(geteuid()); }
unsigned ctl_gid() { return g_target.set ? g_target.gid : static_cast<unsigned>(getegid()); }
const std::string& ctl_user_name() { return g_target.name; }

unsigned ctl_uid() { return g_target.set ? g_target.uid : static_cast<unsigned>(geteuid()); }

void ctl_target_user_named(const std::string& who) {
  const passwd* pw = getpwnam(who.c_str());
  if (!pw && !who.empty() && who.find_first_not_of("0123456789") == std::string::npos)
    pw = getpwuid(static_cast<uid_t>(std::strtoul(who.c_str(), nullptr, 10)));
  if (!pw) usage_error(fmt::format("no user '{}'", who));
  if (geteuid() != 0 && pw->pw_uid != geteuid())
    runtime_error(fmt::format("user {}: only root can address another user's services", who));
  ctl_target_user(pw->pw_uid, pw->pw_gid, pw->pw_name);
}

TargetUserScope::TargetUserScope(const std::string& who)
    : set_(!who.empty()), prev_set_(g_target.set), prev_uid_(g_target.uid), prev_gid_(g_target.gid),
      prev_name_(g_target.name) {
  if (set_) ctl_target_user_named(who);
}

TargetUserScope::~TargetUserScope() {
  if (set_) g_target = {prev_set_, prev_uid_, prev_gid_, prev_name_};
}

std::string user_text(unsigned uid) {
  passwd pw, *res = nullptr;
  char buf[1024];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res && res->pw_name && *res->pw_name)
    return fmt::format("user {} (uid {})", res->pw_name, uid);
  return fmt::format("uid {}", uid);
}

}  // namespace bonsai::ctl
