// SPDX-License-Identifier: MIT
// Names, directions and groups of the calls bonsai can limit.
#include "abi/calls.h"

namespace bonsai {
namespace {

struct CallInfo {
  std::string_view name;
  CallDir dir;
};

constexpr CallInfo kCalls[] = {
#define BONSAI_X(n, d) {#n, CallDir::d},
    BONSAI_DATA_CALLS(BONSAI_X) BONSAI_META_CALLS(BONSAI_X)
#undef BONSAI_X
};
static_assert(sizeof(kCalls) / sizeof(kCalls[0]) == kCallCount);

constexpr CallMask mask_of_dir(CallDir d) {
  CallMask m = 0;
  for (size_t i = 0; i < kCallCount; ++i)
    if (kCalls[i].dir == d) m |= CallMask{1} << i;
  return m;
}

constexpr std::string_view kGroupNames[] = {"reads", "writes"};

size_t edit_distance(std::string_view a, std::string_view b) {
  if (a.size() > 31 || b.size() > 31) return 99;
  size_t row[32];
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

}  // namespace

std::string_view call_name(CallId c) noexcept {
  auto i = static_cast<size_t>(c);
  return i < kCallCount ? kCalls[i].name : std::string_view{"?"};
}

CallDir call_dir(CallId c) noexcept {
  auto i = static_cast<size_t>(c);
  return i < kCallCount ? kCalls[i].dir : CallDir::Meta;
}

CallMask call_mask_from_name(std::string_view name) noexcept {
  if (name == "reads") return mask_of_dir(CallDir::Read);
  if (name == "writes") return mask_of_dir(CallDir::Write);
  for (size_t i = 0; i < kCallCount; ++i)
    if (kCalls[i].name == name) return CallMask{1} << i;
  return 0;
}

std::string_view call_name_suggest(std::string_view name) noexcept {
  std::string_view best;
  size_t best_d = 3;
  auto consider = [&](std::string_view cand) {
    size_t d = edit_distance(name, cand);
    if (d < best_d) best_d = d, best = cand;
  };
  for (const auto& c : kCalls) consider(c.name);
  for (auto g : kGroupNames) consider(g);
  return best;
}

std::string_view fd_kind_name(FdKind k) noexcept {
  switch (k) {
    case FdKind::Socket: return "socket";
    case FdKind::File: return "file";
    case FdKind::Pipe: return "pipe";
    case FdKind::None: return "none";
  }
  return "?";
}

}  // namespace bonsai
