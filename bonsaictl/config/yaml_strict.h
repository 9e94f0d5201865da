// SPDX-License-Identifier: MIT
// What every YAML file bonsaictl reads needs, whatever its schema: problems located at
// FILE:LINE:COL, a first pass that refuses what yaml-cpp accepts silently (a key twice
// in one mapping, a key that is not a plain name, a second document, an alias bomb),
// and a bounded read of the file. The schemas are yaml_load.h's (bonsai's
// configuration) and serve/web_config.h's.
#pragma once
#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "base/diag.h"

namespace bonsai::ctl {

// A diagnostic at `mark` (1-based line and column; none for a null mark).
Diag diag_at(const std::string& file, const YAML::Mark& mark, std::string message);

// The first pass over `text`'s parser events, before any tree is built (linear: a
// mapping's keys go into a hash map with their marks). Appends each problem, and a
// syntax error, to `diags`; stops at the first document past one and at `max_nodes`
// nodes once aliases are expanded. @return true if nothing was found.
bool yaml_strict_scan(const std::string& text, const std::string& file, size_t max_nodes, std::vector<Diag>& diags);

// Reads `path` whole into `text`, at most `max_bytes` (a larger regular file, or an
// endless stream like /dev/zero, is refused); a FIFO without a writer does not hang,
// pipes and devices are read with that bound. @return "" or why not (one line).
std::string yaml_file_read(const std::string& path, size_t max_bytes, std::string& text);

}  // namespace bonsai::ctl
