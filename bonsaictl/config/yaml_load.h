// SPDX-License-Identifier: MIT
// The YAML configuration (docs/reference/config.md): yaml-cpp -> Config,
// with every problem reported as a Diag at the line and column of the offending
// value. Nothing is applied here; `check`, `load` and `run -c` use the result.
#pragma once
#include <string>
#include <string_view>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "abi/limits_abi.h"
#include "abi/shm_abi.h"
#include "base/diag.h"
#include "config/yaml_strict.h"

namespace bonsai::ctl {

struct CompressionConfig {
  bool present = false;
  std::vector<std::string> to;      // "ADDR[/PREFIX]:PORT|*"
  bool accept = false;
  std::string policy = "datarate";  // datarate | queue | fixed:LEVEL
  std::vector<std::string> levels;  // none | lz4 | zstd:N
};

// A service's `fleet:`: its limits are caps of the whole fleet of hosts.
inline constexpr uint32_t kFleetPeriodMinMs = 50;
inline constexpr uint32_t kFleetPeriodMaxMs = 10'000;
inline constexpr uint32_t kFleetPeriodDefaultMs = 250;
struct FleetConfig {
  bool present = false;
  std::string store;          // redis://HOST:PORT | redis+unix:///PATH (bonsaictl/config/fleet_store.h)
  uint32_t period_ms = kFleetPeriodDefaultMs;
  std::string password_file;  // "" : no AUTH
  YAML::Mark password_mark;   // of password_file's value (checked on disk by yaml_load_file)
  std::string sentinel_password_file;  // redis+sentinel: AUTH on the Sentinels ("" : none)
  YAML::Mark sentinel_password_mark;   // of sentinel_password_file's value (checked on disk as password_file)
  std::string fleet_namespace;  // `namespace:`: "" the shared default (keys bonsai:fleet:{SERVICE}:...)
  uint32_t expected_hosts = 0;  // `expected_hosts:`: the fallback before any grant is cap / this (0: the whole cap)
};
inline constexpr uint32_t kFleetExpectedHostsMax = 1'000'000;

// A service's `protect:` (docs/reference/protect.md): the durations of its `calls` are
// measured, and while their p99 is above `p99_ns` the controller lowers the rates of the
// `squeeze` services' rules toward their floors (raising them back when it is within).
inline constexpr uint64_t kProtectP99MinNs = 10'000;           // 10 us: finer is below what a period can measure
inline constexpr uint64_t kProtectP99MaxNs = 10'000'000'000ull;  // 10 s
struct ProtectConfig {
  bool present = false;
  YAML::Mark mark;
  CallMask calls = 0;
  uint64_t p99_ns = 0;
  std::vector<std::string> squeeze;
  std::vector<YAML::Mark> squeeze_marks;  // one per name
};

struct ServiceConfig {
  std::string name;
  YAML::Mark mark;                 // of the service's key
  ShmScope scope = ShmScope::Process;
  LimitSet limits{};
  std::vector<YAML::Mark> rule_marks;  // one per rule in `limits`
  std::vector<uint64_t> rule_floors;   // one per rule: `floor:` (default 1% of the rate, at least 1)
  ProtectConfig protect;
  CompressionConfig compression;
  FleetConfig fleet;
  std::string io_uring;             // "" (not given), "deny" or "allow": BONSAI_IO_URING
  bool strict = false;              // `strict: true`: run as with --strict (docs/reference/supervised.md "Strict mode")
  std::string user;                 // "" (the caller's) or the user the service runs as (root's load/run)
  YAML::Mark user_mark;
};

// Input bounds: a configuration file is read up to this size (a larger one, or an
// endless one like /dev/zero, is an error), and may hold at most this many nodes
// once its aliases are expanded (a small file of nested aliases is not a bomb).
inline constexpr size_t kMaxConfigBytes = size_t{4} << 20;
inline constexpr size_t kMaxConfigNodes = 4'000'000;
// Diagnostics reported for one file at most (then "N more not shown").
inline constexpr size_t kMaxConfigDiags = 100;

struct Config {
  std::string file;
  std::vector<ServiceConfig> services;
  // Shares (docs/reference/shares.md): `host: capacity:`, a list of rules like `limits:` (no ceil).
  bool has_host = false;
  LimitSet capacity{};
  std::vector<YAML::Mark> capacity_marks;  // one per capacity rule
  const ServiceConfig* find(std::string_view name) const;
};

// Parses `text` (named `file` in diagnostics). Every problem found is appended to
// `diags` in file order, each with its line and column; the Config is complete only
// if none was. Strict: a key twice in one mapping, a second document, a key that is
// not a plain name are errors. Never throws on bad input.
Config yaml_load_string(const std::string& text, const std::string& file, std::vector<Diag>& diags);

// Reads and parses `path` (a missing or unreadable file, a directory, or more than
// kMaxConfigBytes are diagnostics too; pipes and devices are read with that bound).
Config yaml_load_file(const std::string& path, std::vector<Diag>& diags);

// Shares: checks the services' rates against the host capacity (the sum of the rates under
// each capacity rule at most its rate; a ceil with no capacity over it) and gives each
// sharing rule its capacity rule (shares_resolve). Problems go to `diags`. (yaml_shares.cc)
void shares_check(Config& cfg, std::vector<Diag>& diags);

// Protect (yaml_protect.cc): every squeezed service is defined, is not the
// protecting one, is squeezed by one protected service only, is not itself protected,
// has a limit to lower and neither fleet caps nor ceilings (which would undo a lowered
// rate); floors are at most their rates. Problems go to `diags`.
void protect_check(const Config& cfg, std::vector<Diag>& diags);

// Fleet (yaml_fleet.cc): every `password_file` exists, is a regular file (no symlink) of
// the caller's user (the agent's: `load` starts it) with no group or other bits.
// Problems go to `diags` at the path's line and column. Only for files read from disk.
void fleet_files_check(const Config& cfg, std::vector<Diag>& diags);

// ---- pieces shared with yaml_compression.cc, yaml_fleet.cc (diag_at: yaml_strict.h) ----
void compression_load(const YAML::Node& node, const std::string& file, CompressionConfig& out,
                      std::vector<Diag>& diags);
void fleet_load(const YAML::Node& node, const std::string& file, FleetConfig& out, std::vector<Diag>& diags);
void protect_load(const YAML::Node& node, const std::string& file, ProtectConfig& out, std::vector<Diag>& diags);
// Checks one compression.to entry. @return "" or what is wrong with it.
std::string compression_target_problem(std::string_view target);
// Checks one compression level name. @return "" or what is wrong.
std::string compression_level_problem(std::string_view level);

}  // namespace bonsai::ctl
