// SPDX-License-Identifier: MIT
// The library's constructor and destructor. Set-up also runs lazily from the first
// wrapper call (another library's constructor may call write() before ours runs),
// and reads the environment here because some workers (nginx) lose theirs later.
#include "interpose/real.h"
#include "runtime/limiter.h"

namespace {

__attribute__((constructor(101))) void bonsai_constructor() {
  bonsai::real::resolve_all();
  bonsai::limiter_init_once();
}

__attribute__((destructor)) void bonsai_destructor() { bonsai::stats_dump_at_exit(); }

}  // namespace
