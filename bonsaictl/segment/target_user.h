// SPDX-License-Identifier: MIT
// Whose services bonsaictl addresses: the effective user, or the one root names with
// `--user NAME` (bonsaictl/cmd/commands.cc). Segment names carry this uid; segments
// root creates for another user are owned by that user (mode 0600), so its processes
// attach as usual.
#pragma once
#include <string>

namespace bonsai::ctl {

unsigned ctl_uid();                // the uid that names the segments: the effective one, or --user's
unsigned ctl_gid();                // its group (for segments root makes for another user)
// `--user NAME` (root only, bonsaictl/cmd/commands.cc): address NAME's services; segments
// root creates for it are owned by it (mode 0600), so its processes attach as usual.
void ctl_target_user(unsigned uid, unsigned gid, const std::string& name);
bool ctl_other_user();             // --user names someone other than the effective user
const std::string& ctl_user_name();
// Resolves NAME or UID and makes it the target (root only, or the caller itself).
// Throws a usage error (unknown user) or a runtime error (not allowed).
void ctl_target_user_named(const std::string& who);
// While alive, `who` is the target (for one service of a file); then the previous one.
class TargetUserScope {
 public:
  explicit TargetUserScope(const std::string& who);
  ~TargetUserScope();
  TargetUserScope(const TargetUserScope&) = delete;
  TargetUserScope& operator=(const TargetUserScope&) = delete;

 private:
  bool set_, prev_set_;
  unsigned prev_uid_, prev_gid_;
  std::string prev_name_;
};

// "user nobody (uid 65534)", or "uid 4242" when the user has no name.
std::string user_text(unsigned uid);

}  // namespace bonsai::ctl
