// SPDX-License-Identifier: MIT
// `bonsaictl fleet-agent [-c FILE] [--host-id ID]` (docs/reference/fleet.md): the one
// process per host namespace (BONSAI_SHM_PREFIX and uid, held by a lock file) that
// talks to Redis. It serves the fleet services of the trusted configuration `load` and
// `run` keep in the user's own directory (config/fleet_trusted.h), or with -c those of
// FILE (a file of the agent's user nobody else can write), each on its own period --
// never a segment because its fleet flag is set: segments are their tenants' to write.
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <algorithm>
#include <map>
#include <set>
#include <sys/file.h>
#include <sys/random.h>
#include <thread>
#include <unistd.h>

#include "cmd/commands.h"
#include "fleet/fleet_agent.h"
#include "fleet/fleet_publish.h"
#include "sys/clock.h"
#include "config/fleet_trusted.h"
#include "config/owned_file.h"
#include "config/yaml_load.h"

namespace bonsai::ctl {
namespace {

constexpr uint64_t kRescanNs = 1'000'000'000;       // new and removed services are found within a second
constexpr uint64_t kIdleExitNs = 5'000'000'000;     // --exit-when-idle: no fleet service for this long
constexpr uint64_t kMaxSleepNs = 50'000'000;        // a stop signal is seen within this

std::atomic<int> g_stop{0};

bool host_id_ok(const std::string& id) {
  if (id.empty() || id.size() >= kFleetHostIdMax) return false;
  for (char c : id)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
          c == '_' || c == ':'))
      return false;
  return true;
}

std::string hostname_id() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "localhost";
  std::string s(buf);
  if (s.size() >= kFleetHostIdMax) s.resize(kFleetHostIdMax - 1);
  return s;
}

// Holds the namespace's lock for the agent's life. @return the descriptor, or -1 with
// `holder` (the pid written in the file) when another agent has it, or -2 with `why`
// when the lock cannot be used at all (fleet_lock_open: a squatted name).
int lock_take(std::string& holder, std::string& why) {
  int fd = fleet_lock_open(why);
  if (fd < 0) return -2;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {};
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
    close(fd);
    return -1;
  }
  std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {}  // the pid is for humans only
  return fd;
}

// This agent's token (fleet_script.h): random per start, so the store tells a second
// agent with the same host id from this one (and a restart from a clash).
std::string agent_token() {
  uint64_t v[2] = {0, 0};
  if (getrandom(v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) v[0] = mono_ns() ^ (uint64_t(getpid()) << 32), v[1] = unix_now_ns();
  return fmt::format("{:016x}{:016x}", v[0], v[1]);
}

// Says `what` about `name` once (until it changes; "" clears it).
void say_once(std::map<std::string, std::string>& said, const std::string& name, const std::string& what) {
  auto& last = said[name];
  if (last == what) return;
  last = what;
  if (!what.empty()) fmt::print(stderr, "bonsaictl fleet-agent: {}: {}\n", name, what);
}

// The fleet services to serve now: FILE's (`only`, -c) or the trusted files'.
std::map<std::string, FleetTrusted> wanted(const std::map<std::string, FleetTrusted>& only,
                                           std::map<std::string, std::string>& said) {
  if (!only.empty()) return only;
  std::map<std::string, FleetTrusted> out;
  std::string why;
  std::vector<std::string> names = fleet_trusted_list(why);
  say_once(said, "(trusted configuration)", why);
  for (const auto& name : names) {
    FleetTrusted t;
    int r = fleet_trusted_read(name, t, why);
    say_once(said, name + " (trusted)", r < 0 ? why : "");
    if (r == 1) out.emplace(name, std::move(t));
  }
  // 0.2.0 kept the configuration in the segment: such a service is said, not served
  // (each segment looked at once: a mapping per segment per second is not free).
  static std::set<std::string> looked;
  for (const auto& name : services_list()) {
    if (out.count(name) || !looked.insert(name).second || looked.size() > 100'000) continue;
    bool flag = false;
    try {
      auto seg = Segment::open(name, false);
      seg->guarded([&] { flag = seg->seg().fleet.enabled.load(std::memory_order_relaxed) == 1; });
    } catch (const CtlError&) {
    }
    say_once(said, name + " (untrusted)",
             flag ? fmt::format("its segment says it has fleet caps, but {} holds no trusted configuration for it: not "
                                "served (a segment is its tenants' to write); `bonsaictl load` its file again (0.2.0 "
                                "kept the configuration in the segment)", fleet_dir())
                  : "");
  }
  return out;
}

// The services served now: those no longer wanted, whose segment is gone or replaced,
// or whose trusted configuration changed (a new `load`) are dropped; new ones opened.
void rescan(std::map<std::string, std::unique_ptr<FleetService>>& served, const std::map<std::string, FleetTrusted>& only,
            const std::string& host_id, const std::string& token, std::map<std::string, std::string>& said) {
  std::map<std::string, FleetTrusted> want = wanted(only, said);
  for (auto it = served.begin(); it != served.end();) {
    auto w = want.find(it->first);
    bool keep = w != want.end() && w->second.text == it->second->trusted().text &&
                it->second->segment().file_state() == FileState::Same;
    it = keep ? std::next(it) : served.erase(it);
  }
  for (auto& [name, t] : want) {
    if (served.count(name)) continue;
    if (access(segment_path(name).c_str(), F_OK) != 0) continue;  // not loaded (yet) on this host
    try {
      auto seg = Segment::open(name, false);  // the agent's own uid's (no --user): checked owner and mode
      seg->check();
      if (!fleet_trusted_matches(t, seg->fd())) {
        say_once(said, name, "its segment is not the one `load`/`run` wrote the trusted configuration for (removed "
                             "and made again?): not served; `load` its file again");
        continue;
      }
      say_once(said, name, "");
      fmt::print(stderr, "bonsaictl fleet-agent: serving {} as host '{}' (store {})\n", name, host_id, t.fleet.store);
      served.emplace(name, std::make_unique<FleetService>(std::move(seg), t, host_id, token));
    } catch (const CtlError& e) {
      say_once(said, name, e.what());
    }
  }
}

constexpr CliOption kOptions[] = {
    {"-c, --config", OptArg::Required, "FILE",
     "serve FILE's fleet services, configured by FILE (which must be the\n"
     "agent's user's or root's, not writable by group or others)"},
    {"--host-id", OptArg::Required, "ID", "this host's name in the fleet (default: the hostname)"},
    // `run` and `load` start their agent so: it leaves once no fleet service is left.
    {"--exit-when-idle", OptArg::None, {}, {}, true},
};

int cmd_fleet_agent(const Args& args) {
  int ready = fleet_ready_fd_take();  // `load`/`run` started us: tell them whether we serve
  CliParsed p = options_parse(args, kOptions);
  if (!p.words.empty() || !p.rest.empty())
    usage_error(fmt::format("unexpected argument '{}'", p.words.empty() ? p.rest[0] : p.words[0]));
  std::string file = p.value("-c"), host_id = p.value("--host-id");
  bool exit_idle = p.has("--exit-when-idle");
  // Segments and the trusted configuration are the agent's own user's; root serving
  // another user's (--user) would act on what that user wrote as root.
  if (ctl_other_user())
    fleet_ready_tell(ready, "the fleet agent serves its own user's services: run it as that user"),
    usage_error("fleet-agent serves its own user's services: run it as that user (bonsai-fleet-agent@USER), not "
                "with --user");
  if (host_id.empty()) host_id = hostname_id();
  if (!host_id_ok(host_id))
    fleet_ready_tell(ready, fmt::format("bad host id '{}' (give the agent --host-id)", host_id)),
    usage_error(fmt::format("bad --host-id '{}' (1-{} of A-Z a-z 0-9 . - _ :)", host_id, kFleetHostIdMax - 1));
  std::map<std::string, FleetTrusted> only;
  if (!file.empty()) {
    // Taken only from a file of the agent's own user that nobody else can write.
    std::vector<Diag> diags;
    Config cfg = yaml_load_owned(file, diags);
    if (!diags.empty()) return diags_print(diags), kExitUsage;
    for (const auto& s : cfg.services)
      if (s.fleet.present) only.emplace(s.name, fleet_trusted_of(s));
    if (only.empty()) usage_error(fmt::format("{} has no service with 'fleet:'", file));
  }
  std::string holder, why;
  int lock = lock_take(holder, why);
  // A probe holds the lock for an instant (run/load looking for an agent, `flock -n`):
  // only a lock still held after a second is another agent's.
  for (int i = 0; lock == -1 && i < 50; ++i) {
    usleep(20'000);
    lock = lock_take(holder, why);
  }
  if (lock == -2) {
    fleet_ready_tell(ready, why);
    runtime_error(why);
  }
  if (lock < 0) {
    fleet_ready_tell(ready, "ok");  // only this user can hold the lock: another agent of ours serves
    if (exit_idle) return kExitOk;  // started by run/load while another one came up: fine
    runtime_error(fmt::format("another fleet agent (pid {}) serves this namespace ({})", holder, fleet_lock_path()));
  }
  const std::string token = agent_token();
  std::signal(SIGINT, [](int) { g_stop.store(1); });
  std::signal(SIGTERM, [](int) { g_stop.store(1); });
  std::signal(SIGPIPE, SIG_IGN);
  fmt::print(stderr, "bonsaictl fleet-agent: host '{}', namespace '{}' (lock {})\n", host_id, shm_prefix(),
             fleet_lock_path());
  fleet_ready_tell(ready, "ok");
  std::map<std::string, std::unique_ptr<FleetService>> served;
  std::map<std::string, std::string> said;
  uint64_t next_scan = 0, idle_since = mono_ns();
  while (!g_stop.load()) {
    uint64_t now = mono_ns();
    if (now >= next_scan) {
      rescan(served, only, host_id, token, said);
      next_scan = now + kRescanNs;
      if (!served.empty()) idle_since = now;
      else if (exit_idle && now - idle_since > kIdleExitNs) break;
    }
    uint64_t wake = next_scan;
    for (auto it = served.begin(); it != served.end();) {
      try {
        if (it->second->next_ns() <= mono_ns()) it->second->step(mono_ns());
        wake = std::min(wake, it->second->next_ns());
        ++it;
      } catch (const CtlError& e) {  // a damaged or truncated segment: dropped, looked at again by the next scan
        fmt::print(stderr, "bonsaictl fleet-agent: {}: {}\n", it->first, e.what());
        it = served.erase(it);
      }
    }
    now = mono_ns();
    if (wake > now) std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(wake - now, kMaxSleepNs)));
  }
  fmt::print(stderr, "bonsaictl fleet-agent: stopped; the leases run out and hosts fall back to their share\n");
  close(lock);
  return kExitOk;
}

}  // namespace

extern const Command kCmdFleetAgent{
    "fleet-agent", "fleet-agent [-c FILE] [--host-id ID]",
    "Serves the fleet-wide caps (a service's 'fleet:') of this namespace: each period it\n"
    "leases the host's share of every fleet cap from Redis and sets the host's limits\n"
    "to it. Runs in the foreground; one per namespace (BONSAI_SHM_PREFIX and user),\n"
    "held by a lock file in a directory only the user can write (/dev/shm/...bonsai-fleet.UID.d).\n"
    "It serves the fleet services `load` and `run` wrote into that directory (never a\n"
    "segment because it says fleet). `run` and `load` start one when none runs.\n",
    kOptions,
    "exit status: 0 stopped by SIGINT/SIGTERM, 1 another agent holds the lock or its\n"
    "directory is not the user's own (squatted), 2 usage\n",
    cmd_fleet_agent};

}  // namespace bonsai::ctl
