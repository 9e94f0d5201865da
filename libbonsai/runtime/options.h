// SPDX-License-Identifier: MIT
// Every tunable of the library, one row each: name, default, environment variable,
// what it does. Read once, in the constructor.
#pragma once
#include <cstdint>

namespace bonsai {

#define BONSAI_OPTIONS(X)                                                              \
  X(spin_ns, 1000000, "BONSAI_SPIN_NS", "waits shorter than this busy-wait, longer ones sleep")   \
  X(debt_ns, 2000000, "BONSAI_DEBT_NS", "debt a bucket may run up before a caller sleeps it off (so sleeps are long and rare)")

struct Options {
#define BONSAI_X(name, def, env, doc) uint64_t name = def;
  BONSAI_OPTIONS(BONSAI_X)
#undef BONSAI_X
};

// Reads the BONSAI_* variables (numbers in ns, or with a unit: 500us, 2ms, 1s).
// Bad values are reported once and keep the default.
void options_load(Options& opts) noexcept;

}  // namespace bonsai
