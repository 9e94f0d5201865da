// SPDX-License-Identifier: MIT
// What the library does when the process ends: the stats line, then the service slot
// given back (defined in interpose/init.cc). Called from our destructor and from
// _exit()/_Exit() (interpose/exit_calls.cc), which run no destructors. Runs once.
#pragma once

namespace bonsai {

void process_exit_hooks() noexcept;

}  // namespace bonsai
