// SPDX-License-Identifier: MIT
// The answers to a notification (sv_answer.h).
#include "supervisor/sv_answer.h"

#include <seccomp.h>

#include <linux/seccomp.h>

namespace bonsai::ctl {

void sv_respond(int lfd, uint64_t id) noexcept {
  seccomp_notif_resp resp{};
  resp.id = id;
  resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  seccomp_notify_respond(lfd, &resp);  // ENOENT: interrupted or killed meanwhile; nothing to do
}

void sv_respond_value(int lfd, uint64_t id, int64_t r) noexcept {
  seccomp_notif_resp resp{};
  resp.id = id;
  resp.val = r >= 0 ? r : 0;
  resp.error = r < 0 ? static_cast<int32_t>(r) : 0;
  seccomp_notify_respond(lfd, &resp);  // ENOENT: interrupted meanwhile (see SvHandler::emulate)
}

}  // namespace bonsai::ctl
