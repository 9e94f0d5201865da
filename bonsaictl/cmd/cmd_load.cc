// SPDX-License-Identifier: MIT
// `bonsaictl load [FILE]`: create or update every service in FILE (default
// /etc/bonsai/bonsai.yaml), all or nothing: nothing is written unless the whole file is
// valid and every segment could be opened.
#include <algorithm>
#include <fmt/core.h>
#include <memory>
#include <string>
#include <unistd.h>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/wait.h>

#include "cmd/commands.h"
#include "segment/protect_owner.h"
#include "segment/host_client.h"
#include "config/agent_log.h"
#include "config/shares_trusted.h"
#include "fleet/fleet_publish.h"
#include "shm/shm_name.h"
#include "segment/shm_client.h"
#include "config/owned_file.h"
#include "config/yaml_load.h"
#include "launch/cdi_spec.h"

namespace bonsai::ctl {
namespace {

// The configuration `load` reads when given no FILE (the Debian package's conffile).
constexpr const char* kDefaultFile = "/etc/bonsai/bonsai.yaml";

// `protect:`: starts `bonsaictl protect-agent FILE` in its own session unless a
// live controller serves the protected services already (its pid in their segments;
// protect-agent itself refuses a second one). Says what it did.
void protect_agent_ensure(const Config& cfg, std::vector<std::unique_ptr<Segment>>& segs, const std::string& file) {
  bool any = false, served = false;
  for (size_t i = 0; i < segs.size(); ++i) {
    if (!cfg.services[i].protect.present) continue;
    any = true;
    uint32_t pid = 0;
    uint64_t start = 0;
    segs[i]->guarded([&] {
      pid = segs[i]->seg().protect.controller_pid.load(std::memory_order_relaxed);
      start = segs[i]->seg().protect.controller_start.load(std::memory_order_relaxed);
    });
    if (protect_agent_alive(pid, start)) served = true;  // not a reused pid (segment/protect_owner.h)
  }
  if (!any) return;
  if (served) {
    fmt::print("protect: a protect-agent runs already (restart it to apply a changed protect:)\n");
    return;
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  char abs[4096];
  if (n <= 0 || !realpath(file.c_str(), abs)) {
    fmt::print(stderr, "bonsaictl load: cannot start a protect-agent: start `bonsaictl protect-agent {}`\n", file);
    return;
  }
  std::string text;  // the agent takes its configuration only from a file of its user's (owned_file.h)
  if (std::string why = owned_file_read(-1, abs, geteuid(), false, kMaxConfigBytes, text); !why.empty()) {
    fmt::print(stderr, "bonsaictl load: NO PROTECT-AGENT started: {} (it takes its configuration only from its own "
               "user's files)\n", why);
    return;
  }
  self[n] = '\0';
  std::string why;
  int log = agent_log_open("protect-agent", why);  // its output, where `stat` and the operator look
  if (log < 0) return fmt::print(stderr, "bonsaictl load: NO PROTECT-AGENT started: {}\n", why);
  pid_t pid = fork();
  if (pid < 0) {
    close(log);
    return fmt::print(stderr, "bonsaictl load: cannot start a protect-agent: {}\n", std::strerror(errno));
  }
  if (pid == 0) {
    setsid();  // a grandchild in its own session: nobody's zombie, outlives load
    if (fork() != 0) _exit(0);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) dup2(null, 0);
    dup2(log, 1), dup2(log, 2);
    unsetenv("LD_PRELOAD");
    execl(self, self, "protect-agent", abs, static_cast<char*>(nullptr));
    _exit(127);
  }
  close(log);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  fmt::print("protect: started a protect-agent for {}; its log: {}\n", abs, agent_log_path("protect-agent"));
}

int cmd_load(const Args& args) {
  CliParsed p = options_parse(args, {});
  std::vector<std::string> files = p.words;
  files.insert(files.end(), p.rest.begin(), p.rest.end());
  if (files.size() > 1) usage_error("load takes one FILE");
  if (files.empty() && access(kDefaultFile, F_OK) != 0)
    usage_error(fmt::format("load needs a FILE (there is no {})", kDefaultFile));
  const std::string file = files.empty() ? kDefaultFile : files[0];
  std::vector<Diag> diags;
  Config cfg = yaml_load_file(file, diags);
  if (!diags.empty()) {
    diags_print(diags);
    fmt::print(stderr, "bonsaictl load: {}: {} error{}; nothing was changed\n", file, diags.size(),
               diags.size() == 1 ? "" : "s");
    return kExitUsage;
  }
  // Agents act as this user on this user's segments only: --user with a fleet or
  // protect: service would have them act on another user's (the file's `user:` with
  // them is refused by the loader).
  bool fleet_any = false, protect_any = false;
  for (const auto& s : cfg.services) fleet_any = fleet_any || s.fleet.present, protect_any = protect_any || s.protect.present;
  if ((fleet_any || protect_any) && ctl_other_user())
    usage_error(fmt::format("{} has {} services: their agent serves its own user only; load it as {} (without --user); "
                            "nothing was changed", file, fleet_any ? "fleet" : "protect", ctl_user_name()));
  // Phase 1: open (or create) every segment; on any failure undo the creations.
  std::vector<std::unique_ptr<Segment>> segs;
  try {
    for (const auto& s : cfg.services) {
      TargetUserScope as(s.user);  // `user:` (root): the segment is that user's
      segs.push_back(Segment::open(s.name, true, s.scope));
    }
  } catch (const CtlError&) {
    for (size_t i = 0; i < segs.size(); ++i)
      if (segs[i]->created()) {
        TargetUserScope as(cfg.services[i].user);
        segment_remove(segs[i]->service());
      }
    fmt::print(stderr, "bonsaictl load: nothing was changed\n");
    throw;
  }
  // Phase 2: publish; the host capacity first, so that processes re-reading their
  // limits find what their ceilings borrow from. One host segment per user of the file.
  if (cfg.has_host) {
    std::vector<std::string> users;
    for (const auto& s : cfg.services)
      if (std::find(users.begin(), users.end(), s.user) == users.end()) users.push_back(s.user);
    if (users.empty()) users.push_back("");
    for (const auto& u : users) {
      TargetUserScope as(u);
      host_install(cfg.capacity);
      fmt::print("host capacity: {} rule{}{}\n", cfg.capacity.count, cfg.capacity.count == 1 ? "" : "s",
                 u.empty() ? "" : fmt::format(", for user {}", u));
    }
  }
  // Phase 2: publish.
  bool fleet = false;
  std::string trusted_problem;  // a fleet service's trusted configuration not written
  for (size_t i = 0; i < segs.size(); ++i) {
    const ServiceConfig& s = cfg.services[i];
    segs[i]->set_scope(s.scope);
    // `protect:`: which calls its processes time, read again at this new limits sequence.
    segs[i]->guarded([&] {
      ShmProtect& sp = segs[i]->seg().protect;
      sp.calls.store(s.protect.present ? s.protect.calls : 0, std::memory_order_relaxed);
      sp.target_ns.store(s.protect.present ? s.protect.p99_ns : 0, std::memory_order_relaxed);
    });
    uint64_t seq = segs[i]->write_limits(fleet_publish(*segs[i], s, trusted_problem));
    fleet = fleet || s.fleet.present;
    fmt::print("{} {}: scope {}, {} limit{} (limits #{}){}{}\n", segs[i]->created() ? "created" : "updated", s.name,
               s.scope == ShmScope::Service ? "service" : "process", s.limits.count, s.limits.count == 1 ? "" : "s", seq,
               s.fleet.present ? fmt::format(", fleet caps through {}", s.fleet.store) :
               s.protect.present ? fmt::format(", protected (p99 {} us)", s.protect.p99_ns / 1000) : "",
               s.user.empty() ? "" : fmt::format(", for user {}", s.user));
  }
  // The trusted copy of the shares `set` checks its changes against (config/shares_trusted.h):
  // the capacity and the rules of this user's services, as installed.
  {
    SharesTrusted t;
    std::string why;
    int have = shares_trusted_read(t, why);
    if (have >= 0 && (cfg.has_host || have > 0)) {
      if (cfg.has_host) t.has_capacity = true, t.capacity = cfg.capacity;
      for (const auto& s : cfg.services)
        if (s.user.empty()) t.services[s.name] = s.limits;
      why = shares_trusted_write(t);
    }
    if (!why.empty())
      fmt::print(stderr, "bonsaictl load: WARNING: the trusted copy of the shares is not written ({}): `set` cannot "
                         "check changes against the capacity\n", why);
  }
  // Specs `cdi generate` wrote for these users name the segments: a new service gets its
  // device (docs/reference/containers.md). Segments are updated in place, so running containers
  // keep theirs.
  std::vector<std::string> users;
  for (const auto& s : cfg.services)
    if (std::find(users.begin(), users.end(), s.user) == users.end()) users.push_back(s.user);
  for (const auto& u : users) {
    TargetUserScope as(u);
    for (const auto& line : cdi_refresh()) fmt::print("cdi: {}\n", line);
  }
  // A fleet service needs this namespace's agent (one per namespace: its lock decides).
  // None can run (its lock squatted, it died at once): loud, exit 1 -- the services
  // would wait at their fallback with nobody leasing.
  if (fleet) {
    std::string msg = trusted_problem;
    bool ok = msg.empty() && fleet_agent_ensure(msg);
    if (!ok)
      runtime_error(fmt::format("the fleet services are loaded but NO FLEET AGENT serves them: {}. Until one runs they "
                                "stay at their fallback (cap / expected_hosts)",
                                msg));
    if (!msg.empty()) fmt::print(stderr, "bonsaictl load: {}\n", msg);
    else fmt::print("fleet: a fleet agent serves this namespace already (the log of one load started: {})\n",
                    agent_log_path("fleet-agent"));
  }
  protect_agent_ensure(cfg, segs, file);
  return kExitOk;
}

}  // namespace

extern const Command kCmdLoad{"load", "load [FILE]",
                              "Creates or updates the shared-memory segment of every service in FILE and\n"
                              "publishes its limits; running processes apply them on their next call.\n"
                              "Without FILE: /etc/bonsai/bonsai.yaml, when it exists.\n"
                              "All or nothing: an invalid file or an unusable segment changes nothing.\n"
                              "A changed scope applies to processes that attach afterwards.\n"
                              "A fleet service needs a fleet agent: load starts one, and fails when none can run.\n"
                              "A protect: service needs a protect-agent: load starts one unless one runs.\n",
                              {},
                              "exit status: 0 loaded, 1 a segment could not be opened or no fleet agent can\n"
                              "run (e.g. another user squats its lock directory), 2 invalid file\n",
                              cmd_load};

}  // namespace bonsai::ctl
