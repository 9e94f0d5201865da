// SPDX-License-Identifier: MIT
// The limit language of BONSAI_LIMITS and `bonsaictl set`:
//   RULE[,RULE]...   RULE = CALLS=RATE[:burst=SIZE][:ceil=RATE][:fd=KIND[+KIND]...]
//   (KIND: socket, file or pipe)
//   (ceil: shares, the most the rule may reach borrowing a host's idle capacity, >= RATE)
//   (at most kMaxRules rules; each option at most once per rule)
//   CALLS = name or group (reads, writes), several joined by '+' share one bucket
//   RATE  = NUMBER UNIT/s (B KB MB GB TB powers of 1000, KiB MiB GiB TiB of 1024)
//           or NUMBER/s (calls per second); NUMBER may have decimals (2.5/s, 0.4/s), kept
//           exactly to a millionth of a unit a second (a finer one is refused, never rounded)
// Shared by libbonsai and bonsaictl. No allocation, no exceptions, no syscalls.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "abi/limits_abi.h"

namespace bonsai {

struct ParseError {
  size_t offset = 0;   // byte offset of the offending text in the input
  size_t length = 0;   // its length (at least 1 unless the input is empty)
  char message[160] = {};  // human-readable, NUL-terminated
};

// Parses `text` into `out` (rules in order of appearance) and checks it (no call in
// two buckets, byte rates only on data calls).
// @return true on success; false with `err` filled, `out` unspecified.
[[nodiscard]] bool limit_parse(std::string_view text, LimitSet& out, ParseError& err) noexcept;

// Parses a size with an optional unit ("256KiB", "1.5MB", "4096").
// @return true with `bytes` set; false if malformed or out of range.
[[nodiscard]] bool size_parse(std::string_view text, uint64_t& bytes) noexcept;

// Parses a whole rate ("10MiB/s" -> Bytes, "200/s" -> Calls), > 0 and at most kMaxRate;
// a fraction of a unit a second (2.5/s) is refused with the reason (for the rates kept in
// whole units: ceilings, floors).
[[nodiscard]] bool rate_parse(std::string_view text, uint64_t& rate, RateUnit& unit) noexcept;
// The same with the reason of a failure (offsets are into `text`).
[[nodiscard]] bool rate_parse(std::string_view text, uint64_t& rate, RateUnit& unit, ParseError& err) noexcept;
// Parses a rate exactly, in millionths of a unit a second ("2.5/s" -> 2'500'000), at least
// kMinRateMicro; a rate with a part finer than a millionth is refused with the reason,
// never rounded. Rule rates are this (rule_set_rate_micro).
[[nodiscard]] bool rate_parse_micro(std::string_view text, uint64_t& micro, RateUnit& unit, ParseError& err) noexcept;

// Parses a duration: a number of ns, or with a unit ("500us", "2ms", "1s"), at most a
// minute (more is taken for a typo). @return true with `ns` set.
[[nodiscard]] bool duration_parse(std::string_view text, uint64_t& ns) noexcept;

// Formats a rule back into the language ("read+pread=10MiB/s:burst=256KiB").
// @return characters written (excluding NUL), truncated to `cap`.
size_t rule_format(const Rule& rule, char* buf, size_t cap) noexcept;

inline constexpr uint64_t kMaxRate = 1'000'000'000'000ull;  // 1 TB/s or 10^12 calls/s
// The slowest rate: 0.001 units a second (one call every 1000 s). A unit's cost must stay
// well inside the bucket's clock horizon (token_bucket.h kMaxAheadNs, a day).
inline constexpr uint64_t kMinRateMicro = 1'000;

}  // namespace bonsai
