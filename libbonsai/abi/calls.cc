// SPDX-License-Identifier: MIT
// Names, directions and groups of the calls bonsai can limit.
#include "abi/calls.h"

#include "abi/edit_distance.h"

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

// `opens`: every call that opens a file by path -- open(2), openat(2) (and openat2,
// charged as openat) and creat(2): whichever of them a libc's open() makes.
constexpr CallMask kOpens = CallMask{1} << static_cast<unsigned>(CallId::open) |
                            CallMask{1} << static_cast<unsigned>(CallId::openat) |
                            CallMask{1} << static_cast<unsigned>(CallId::creat);

constexpr std::string_view kGroupNames[] = {"reads", "writes", "opens"};

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
  if (name == "opens") return kOpens;
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
