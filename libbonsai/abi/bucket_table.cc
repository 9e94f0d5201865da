// SPDX-License-Identifier: MIT
// Builds the (call, fd kind) -> bucket lookup table from a LimitSet.
#include "abi/limits_abi.h"

namespace bonsai {

void bucket_table_clear(BucketTable& table) noexcept {
  for (auto& row : table.bucket_of)
    for (auto& cell : row) cell = kNoBucket;
  table.fd_sensitive = false;
}

bool bucket_table_conflict(const BucketTable& table, const Rule& rule, uint8_t index,
                           TableConflict* conflict) noexcept {
  for (size_t c = 0; c < kCallCount; ++c) {
    if (!(rule.calls & (CallMask{1} << c))) continue;
    for (size_t k = 0; k < kFdKindCount; ++k) {
      if (!(rule.fd_mask & (1u << k))) continue;
      uint8_t cell = table.bucket_of[c][k];
      if (cell != kNoBucket) {
        if (conflict) *conflict = {static_cast<CallId>(c), cell, index};
        return true;
      }
    }
  }
  return false;
}

void bucket_table_claim(BucketTable& table, const Rule& rule, uint8_t index) noexcept {
  for (size_t c = 0; c < kCallCount; ++c)
    if (rule.calls & (CallMask{1} << c))
      for (size_t k = 0; k < kFdKindCount; ++k)
        if (rule.fd_mask & (1u << k)) table.bucket_of[c][k] = index;
}

bool bucket_table_build(const LimitSet& set, BucketTable& table, TableConflict* conflict) noexcept {
  bucket_table_clear(table);
  uint32_t n = set.count < kMaxRules ? set.count : kMaxRules;
  for (uint32_t r = 0; r < n; ++r) {
    if (bucket_table_conflict(table, set.rules[r], static_cast<uint8_t>(r), conflict)) return false;
    bucket_table_claim(table, set.rules[r], static_cast<uint8_t>(r));
  }
  for (size_t c = 0; c < kCallCount; ++c)
    for (size_t k = 1; k < kFdKindCount; ++k)
      if (table.bucket_of[c][k] != table.bucket_of[c][0]) table.fd_sensitive = true;
  return true;
}

}  // namespace bonsai

namespace bonsai {

void shares_resolve(LimitSet& set, const LimitSet& capacity) noexcept {
  uint32_t n = set.count < kMaxRules ? set.count : kMaxRules;
  uint32_t m = capacity.count < kMaxRules ? capacity.count : kMaxRules;
  for (uint32_t r = 0; r < n; ++r) {
    Rule& rule = set.rules[r];
    rule.host1 = 0;
    if (!rule_ceil_above(rule)) continue;
    for (uint32_t h = 0; h < m && !rule.host1; ++h) {
      const Rule& cap = capacity.rules[h];
      if (cap.unit == rule.unit && (cap.calls & rule.calls) && (cap.fd_mask & rule.fd_mask))
        rule.host1 = static_cast<uint8_t>(h + 1);
    }
  }
}

}  // namespace bonsai
