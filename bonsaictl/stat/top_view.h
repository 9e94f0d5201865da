// SPDX-License-Identifier: MIT
// What `bonsaictl top` shows: per service, one row per limit in force (the rate of the
// calls it covers against its cap) and one per unlimited call that moved anything,
// from two snapshots. Pure: rendering only, no terminal, no segment.
#pragma once
#include <string>
#include <vector>

#include "stat/stat_snapshot.h"

namespace bonsai::ctl {

struct TopRow {
  std::string service;
  std::string what;        // "writes=8MiB/s" or a call name
  double rate = 0;         // bytes/s (a byte limit, or an unlimited call), calls/s (a call limit)
  double calls_per_s = 0;
  double cap = 0;          // 0: unlimited
  bool per_call = false;   // the cap counts calls
  double throttled_per_s = 0;
  double wait_avg_ms = 0;  // per held call over the interval
  size_t processes = 0;
  double borrowed_per_s = -1;  // shares: a rule with a ceiling, what it borrowed (< 0: no ceiling)
};

enum class TopSort { Rate, Calls, Cap, Throttled, Wait, Name };

// Rows of one service (`cur` with rates from `prev`, interval in cur.interval_s).
std::vector<TopRow> top_rows(const ServiceStat& prev, const ServiceStat& cur);

void top_sort(std::vector<TopRow>& rows, TopSort key);

// The table, `width` columns at most (a terminal's width; 0: no limit).
std::string top_render(const std::vector<TopRow>& rows, double interval_s, size_t width);

}  // namespace bonsai::ctl
