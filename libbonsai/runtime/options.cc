// SPDX-License-Identifier: MIT
// Loading the Duration rows of the options table from the environment (constructor only).
#include "runtime/options.h"

#include "abi/limit_parse.h"
#include "bucket/limits_view.h"
#include "log/blog.h"
#include "sys/startup.h"

namespace bonsai {

// The supervisor leaves sleepers the same room by default (bucket/limits_view.h).
static_assert(option_default_u64(Opt::debt_ns) == kDefaultSlackNs, "BONSAI_DEBT_NS's default is kDefaultSlackNs");

namespace {

BONSAI_STARTUP void duration_load(Opt o, uint64_t& ns) noexcept {
  const char* v = option_env(o);
  if (v && !duration_parse(v, ns))
    blog(LogLevel::Warn, "%s='%s' is not a duration (like 1000000, 500us, 2ms); using %llu ns", option_row(o).name,
         v, static_cast<unsigned long long>(option_default_u64(o)));
}

}  // namespace

BONSAI_STARTUP void options_load(Options& opts) noexcept {
  duration_load(Opt::spin_ns, opts.spin_ns);
  duration_load(Opt::debt_ns, opts.debt_ns);
}

}  // namespace bonsai
