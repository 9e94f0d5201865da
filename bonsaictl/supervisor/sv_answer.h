// SPDX-License-Identifier: MIT
// The supervisor's answers to a notification, the end of every disposition: CONTINUE
// (the kernel makes the call as the program asked) or a result of the supervisor's own
// (bytes, or -errno: a call it made itself, or refused), on the listener the
// notification came from (each tree has its own). An answer to a notification that is
// gone (its thread interrupted or killed meanwhile) is lost harmlessly.
#pragma once
#include <cstdint>

namespace bonsai::ctl {

void sv_respond(int lfd, uint64_t id) noexcept;
// Answers with a result instead of CONTINUE (`r`: bytes, or -errno).
void sv_respond_value(int lfd, uint64_t id, int64_t r) noexcept;

}  // namespace bonsai::ctl
