// SPDX-License-Identifier: MIT
// Diagnostics formatting and "did you mean" (see diag.h).
#include "diag.h"

#include <algorithm>
#include <fmt/core.h>

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
    std::vector<size_t> row(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= word.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= c.size(); ++j) {
        size_t up = row[j];
        row[j] = std::min({up + 1, row[j - 1] + 1, diag + (word[i - 1] == c[j - 1] ? 0u : 1u)});
        diag = up;
      }
    }
    if (row[c.size()] < best_d) best_d = row[c.size()], best = c;
  }
  return best;
}

}  // namespace bonsai::ctl
