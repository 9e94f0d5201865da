// SPDX-License-Identifier: MIT
// Which protect-agent serves a service (issue 52): a pid in a segment counts as a live
// agent only if it is a process of the segments' user whose command line names
// protect-agent and, with a start time, that pid started then (a dead agent's pid may be
// reused; a tenant may write any live pid there, issue 58).
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "segment/protect_owner.h"

using namespace bonsai::ctl;

TEST_CASE("protect_owner: a pid is the agent only with its start time") {
  pid_t self = getpid();
  uint64_t start = proc_start_ticks(self);
  REQUIRE(start > 0);
  CHECK_FALSE(protect_agent_alive(static_cast<uint32_t>(self), start));      // live, started then, but no agent
  CHECK_FALSE(protect_agent_alive(static_cast<uint32_t>(self), start + 1));  // the pid reused by another
  CHECK_FALSE(protect_agent_alive(static_cast<uint32_t>(self), 0));          // no start: the cmdline is unit_tests
  CHECK_FALSE(protect_agent_alive(0, start));
  CHECK_FALSE(protect_agent_alive(0xffffffffu, 1));  // untrusted: no valid pid
  // A child that exits: its pid is dead, whatever the start.
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(0);
  uint64_t child_start = 0;
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK_FALSE(protect_agent_alive(static_cast<uint32_t>(child), child_start));
  CHECK_FALSE(protect_agent_alive(static_cast<uint32_t>(child), start));
}

namespace {
// A child running `argv` (execv); waits until its command line begins with `first`.
pid_t spawn(const char* path, const char* const* argv, const std::string& first) {
  pid_t child = fork();
  if (child == 0) {
    execv(path, const_cast<char* const*>(argv));
    _exit(127);
  }
  for (int i = 0; child > 0 && i < 300; ++i) {
    char buf[256] = {};
    FILE* f = std::fopen(("/proc/" + std::to_string(child) + "/cmdline").c_str(), "r");
    size_t n = f ? std::fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) std::fclose(f);
    if (n >= first.size() && std::string(buf, first.size()) == first) break;
    usleep(10'000);
  }
  return child;
}
void reap(pid_t child) {
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
}
}  // namespace

TEST_CASE("protect_owner: the command line must name protect-agent, and the start time match") {
  const char* sleeper[] = {"sleep", "10", nullptr};
  pid_t other = spawn("/bin/sleep", sleeper, "sleep");
  REQUIRE(other > 0);
  uint64_t s = proc_start_ticks(other);
  CHECK(s > 0);
  CHECK_FALSE(protect_agent_alive(static_cast<uint32_t>(other), 0));  // `sleep 10`: not an agent
  CHECK_FALSE(protect_agent_alive(static_cast<uint32_t>(other), s));  // nor with its own start (a tenant's claim)
  reap(other);
  // A shell whose arguments name protect-agent (as `bonsaictl protect-agent FILE` does).
  const char* agent[] = {"sh", "-c", "sleep 10; :", "protect-agent", nullptr};
  pid_t like = spawn("/bin/sh", agent, "sh");
  REQUIRE(like > 0);
  CHECK(protect_agent_alive(static_cast<uint32_t>(like), 0));
  uint64_t ls = proc_start_ticks(like);
  CHECK(protect_agent_alive(static_cast<uint32_t>(like), ls));
  CHECK_FALSE(protect_agent_alive(static_cast<uint32_t>(like), ls + 1));  // started at another time: another process
  reap(like);
}
