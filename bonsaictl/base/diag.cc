// SPDX-License-Identifier: MIT
// Diagnostics formatting and "did you mean" (see diag.h).
#include "base/diag.h"

#include <algorithm>
#include <fmt/core.h>

#include "abi/edit_distance.h"

namespace bonsai::ctl {

std::string diag_format(const Diag& d) {
  if (d.line <= 0) return fmt::format("{}: {}", d.file, d.message);
  return fmt::format("{}:{}:{}: {}", d.file, d.line, d.column, d.message);
}

void diags_print(const std::vector<Diag>& diags) {
  for (const auto& d : diags) fmt::print(stderr, "{}\n", diag_format(d));
}

std::string_view closest_word(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string_view best;
  size_t best_d = 3;
  for (auto c : candidates) {
    size_t d = edit_distance(word, c);  // abi/edit_distance.h: the library's own
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

}  // namespace bonsai::ctl
