// SPDX-License-Identifier: MIT
// The supervisor's one-line messages on its stderr: a stderr that is full
// (/dev/full), closed, a pipe nobody reads or one that is full must never stop or kill
// the supervisor, whose death makes every notified call of its program fail. A line is
// written at once or dropped: one write(2) when the descriptor is ready (poll, no
// wait), errors ignored (SIGPIPE is ignored in the supervisor). Never throws.
#pragma once
#include <string_view>

namespace bonsai::ctl {

void sv_say(std::string_view line) noexcept;

}  // namespace bonsai::ctl
