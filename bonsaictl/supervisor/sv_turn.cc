// SPDX-License-Identifier: MIT
// The sizes of a paced supervised call's turn (see sv_turn.h).
#include "supervisor/sv_turn.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>

namespace bonsai::ctl {

bool sv_must_not_wait(mode_t mode, int status_flags, bool dontwait) noexcept {
  if (!S_ISSOCK(mode) && !S_ISFIFO(mode) && !S_ISCHR(mode)) return false;
  return dontwait || (status_flags & O_NONBLOCK);
}

uint64_t sv_pace_units(uint64_t need, bool cuttable, const BucketParams* a, const BucketParams* b) noexcept {
  uint64_t q = UINT64_MAX;
  for (const BucketParams* p : {a, b})
    if (p && !p->per_call) q = std::min(q, sv_place_quantum(*p));
  if (q == UINT64_MAX) return 1;  // call-rate buckets only: one call
  if (need == UINT64_MAX) return q;
  if (!cuttable) return need ? need : 1;
  return need < q ? (need ? need : 1) : q;
}

SvPlace sv_pace_take(BucketState& s, const BucketParams& p, uint64_t need, uint64_t units, uint64_t place,
                     bool light, uint64_t now, const PaceShare& share) noexcept {
  if (p.per_call) need = units = place = 1;
  if (need == UINT64_MAX || need < units) need = units;
  if (place < units) place = units;
  PaceTake t = pace_take(s, p, share, PaceAsk{light ? need : 0, units, place}, now);
  return {t.units, t.due, t.way == PaceWay::Queue, t.way == PaceWay::Borrow};
}

SvTurn sv_pace_turn(BucketState& s, const BucketParams& p, uint64_t need, bool cuttable, bool light,
                    uint64_t& credit, uint64_t now, const PaceShare& share) noexcept {
  uint64_t q = sv_place_quantum(p);
  uint64_t want = need == UINT64_MAX ? q : need ? need : 1;
  if (credit && (cuttable || want <= credit)) {
    uint64_t moves = std::min(want, credit);
    credit -= moves;
    return {moves, 0, false};
  }
  uint64_t had = credit, rest = want - had;
  credit = 0;
  uint64_t units = cuttable ? std::min(rest, q) : rest;
  SvPlace pl = sv_pace_take(s, p, rest, units, std::max(units, q), light, now, share);
  uint64_t got = std::min(rest, pl.units);
  credit = pl.units - got;
  return {had + got, pl.due, pl.queued, pl.borrowed ? pl.units : 0};
}

}  // namespace bonsai::ctl
