// SPDX-License-Identifier: MIT
// Service accounting in the Prometheus text exposition format (version 0.0.4), for
// node_exporter's textfile collector (`stat --prometheus`) and `bonsaictl serve`.
// Every metric and label: docs/reference/metrics.md.
#pragma once
#include <string>
#include <vector>

#include "stat/stat_snapshot.h"

namespace bonsai::ctl {

// HELP and TYPE once per family, then one sample per service and call (calls that
// never ran are left out). Counters are live plus exited processes, so they never go
// backwards when a process ends.
std::string prometheus_text(const std::vector<LabeledStat>& services);


}  // namespace bonsai::ctl
