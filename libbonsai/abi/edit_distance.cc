// SPDX-License-Identifier: MIT
// Edit distance (see edit_distance.h): one row of the dynamic programme on the stack.
#include "abi/edit_distance.h"

namespace bonsai {

size_t edit_distance(std::string_view a, std::string_view b) noexcept {
  if (a.size() > kEditDistanceMax || b.size() > kEditDistanceMax) return a.size() > b.size() ? a.size() : b.size();
  size_t row[kEditDistanceMax + 1];
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      size_t sub = diag + (a[i - 1] == b[j - 1] ? 0 : 1);
      size_t best = sub < up + 1 ? sub : up + 1;
      row[j] = best < row[j - 1] + 1 ? best : row[j - 1] + 1;
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace bonsai
