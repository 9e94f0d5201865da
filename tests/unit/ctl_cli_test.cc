// SPDX-License-Identifier: MIT
// Unit tests of bonsaictl's commands through ctl_main, on real segments under a
// private BONSAI_SHM_PREFIX: exit codes (0/1/2), load all-or-nothing, set, mode
// 0600, refusing a segment others can open, stat JSON fields, rm refusing
// while a process is attached.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "cmd/commands.h"
#include "segment/shm_client.h"
#include "stat/stat_format.h"
#include "stat/stat_snapshot.h"
#include "shm/seqlock.h"
#include "shm/shm_proc.h"
#include "shm/shm_slots.h"

using namespace bonsai;
using namespace bonsai::ctl;

namespace {

// Runs bonsaictl with stdout/stderr silenced. @return its exit status.
int run_ctl(std::vector<std::string> args) {
  args.insert(args.begin(), "bonsaictl");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout), std::fflush(stderr);
  int out = dup(1), err = dup(2), null = open("/dev/null", O_WRONLY);
  dup2(null, 1), dup2(null, 2);
  int rc = ctl_main(static_cast<int>(args.size()), argv.data());
  std::fflush(stdout), std::fflush(stderr);
  dup2(out, 1), dup2(err, 2);
  close(out), close(err), close(null);
  return rc;
}

struct Prefix {  // a private segment namespace, cleaned up afterwards
  Prefix() { setenv("BONSAI_SHM_PREFIX", ("ctlunit" + std::to_string(getpid()) + ".").c_str(), 1); }
  ~Prefix() {
    for (const auto& s : services_list()) segment_remove(s);
    unsetenv("BONSAI_SHM_PREFIX");
  }
};

std::string write_file(const std::string& text) {
  std::string path = "/tmp/bonsai-ctl-unit-" + std::to_string(getpid()) + ".yaml";
  std::ofstream(path) << text;
  return path;
}

bool seg_exists(const std::string& service) {
  struct stat st;
  return stat(segment_path(service).c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("ctl: usage errors exit 2, --help exits 0") {
  CHECK(run_ctl({}) == 2);
  CHECK(run_ctl({"frobnicate"}) == 2);
  CHECK(run_ctl({"--help"}) == 0);
  for (const char* c : {"check", "load", "run", "set", "stat", "ls", "rm", "fleet-agent", "protect-agent", "cdi"}) CHECK(run_ctl({c, "--help"}) == 0);
  CHECK(run_ctl({"run", "--", "true"}) == 2);      // no -s
  CHECK(run_ctl({"stat", "--watch", "x"}) == 2);
  CHECK(run_ctl({"set", "web"}) == 2);
}

TEST_CASE("ctl: load is all or nothing; set and stat see the change; mode is 0600") {
  Prefix prefix;
  std::string bad = write_file("version: 1\nservices:\n  a:\n    limits:\n      - {calls: [wirte], rate: 1MB/s}\n");
  CHECK(run_ctl({"check", bad}) == 2);
  CHECK(run_ctl({"load", bad}) == 2);
  CHECK_FALSE(seg_exists("a"));
  std::string good = write_file(
      "version: 1\nservices:\n  a:\n    scope: service\n    limits:\n      - {calls: [write], rate: 1MB/s}\n"
      "  b:\n    limits: []\n");
  CHECK(run_ctl({"check", good}) == 0);
  REQUIRE(run_ctl({"load", good}) == 0);
  REQUIRE(seg_exists("a"));
  struct stat st;
  REQUIRE(stat(segment_path("a").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(run_ctl({"set", "a", "wirte=1MB/s"}) == 2);
  CHECK(run_ctl({"set", "nosuch", "write=1MB/s"}) == 1);
  auto seg = Segment::open("a", false);
  uint64_t seq_before = seg->seg().limits.seq.load();
  REQUIRE(run_ctl({"set", "a", "read=5MiB/s", "openat=10/s"}) == 0);
  ServiceStat s = stat_snapshot(*seg);
  CHECK(s.limits_seq > seq_before);
  CHECK(s.scope == ShmScope::Service);
  REQUIRE(limits_text(s.limits) == std::vector<std::string>{"read=5MiB/s", "openat=10/s"});
  REQUIRE(run_ctl({"set", "--merge", "a", "write=2MB/s"}) == 0);
  CHECK(limits_text(stat_snapshot(*seg).limits).size() == 3);
  // A second load with one unusable segment changes nothing at all.
  std::string path_c = segment_path("c");
  int fd = open(path_c.c_str(), O_CREAT | O_RDWR, 0644);
  REQUIRE(fd >= 0);
  fchmod(fd, 0644);
  close(fd);
  std::string two = write_file(
      "version: 1\nservices:\n  a:\n    limits: []\n  c:\n    limits: []\n  d:\n    limits: []\n");
  uint64_t seq = seg->seg().limits.seq.load();
  CHECK(run_ctl({"load", two}) == 1);
  CHECK(seg->seg().limits.seq.load() == seq);
  CHECK(limits_text(stat_snapshot(*seg).limits).size() == 3);
  CHECK_FALSE(seg_exists("d"));
  CHECK_THROWS_AS(Segment::open("c", false), CtlError);  // mode 0644: refused
  CHECK(run_ctl({"rm", "c"}) == 1);
  CHECK(run_ctl({"rm", "--force", "c"}) == 0);
  CHECK(run_ctl({"ls", "--json"}) == 0);
  CHECK(run_ctl({"stat", "--json"}) == 0);
  unlink(bad.c_str());
}

TEST_CASE("ctl: stat JSON carries the docs/reference/stat-json.md field names; rm refuses while attached") {
  Prefix prefix;
  auto seg = Segment::open("svc", true, ShmScope::Process);
  uint64_t start;
  REQUIRE(proc_status(getpid(), start) == ProcStatus::Alive);
  ShmSlot* slot = slot_claim(seg->seg(), getpid(), start, "unit\"x", 2, 0);
  REQUIRE(slot);
  auto& w = slot->counters.lanes[0].by_call[static_cast<size_t>(CallId::write)];
  w.calls = 3, w.bytes = 12288;
  slot->counters.throttled[static_cast<size_t>(CallId::write)].store(1);
  slot->counters.wait_ns[static_cast<size_t>(CallId::write)].store(777);
  ServiceStat s0 = stat_snapshot(*seg);
  std::string j = stat_json(s0);
  CHECK(j.find("\"service\":\"svc\"") != std::string::npos);
  CHECK(j.find("\"comm\":\"unit\\\"x\"") != std::string::npos);
  CHECK(j.find("\"write\":{\"calls\":3,\"bytes\":12288,\"throttled\":1,\"wait_ns\":777}") != std::string::npos);
  CHECK(j.find("\"total\":{\"processes\":1,") != std::string::npos);
  CHECK(j.find("bytes_per_s") == std::string::npos);
  w.bytes += 1000;
  ServiceStat s1 = stat_snapshot(*seg);
  s1.mono_ns = s0.mono_ns + 500'000'000;  // half a second later
  stat_rates(s0, s1);
  CHECK(s1.total[static_cast<size_t>(CallId::write)].bytes_per_s == Approx(2000));
  CHECK(stat_json(s1).find("\"interval_s\":0.5") != std::string::npos);
  CHECK(stat_table(s1).find("total") != std::string::npos);
  CHECK(run_ctl({"rm", "svc"}) == 1);
  CHECK(seg_exists("svc"));
  slot_release(seg->seg(), *slot);
  CHECK(run_ctl({"rm", "svc"}) == 0);
  CHECK_FALSE(seg_exists("svc"));
}

TEST_CASE("ctl: units for people") {
  CHECK(human_bytes(512) == "512 B");
  CHECK(human_bytes(1536) == "1.50 KiB");
  CHECK(human_bytes(10 * 1048576.0) == "10.00 MiB");
  CHECK(human_ns(999) == "999 ns");
  CHECK(human_ns(2'500'000) == "2.5 ms");
  CHECK(human_ns(3'000'000'000) == "3.00 s");
  CHECK(json_escape("a\"b\\c\n") == "a\\\"b\\\\c\\n");
  CHECK(json_escape("d\xc3\xa9") == "d\xc3\xa9");     // UTF-8 stays UTF-8
  CHECK(json_escape("x\xff") == "x\xef\xbf\xbd");       // not UTF-8: U+FFFD
}

TEST_CASE("ctl: another user's segment is refused (root too), and so is one others can open") {
  CHECK(segment_owner_problem(1000, 0100600, 1000).empty());
  std::string p = segment_owner_problem(1001, 0100600, 1000, "/dev/shm/bonsai.1000.web", "web");
  CHECK(p.find("uid 1001") != std::string::npos);
  CHECK(p.find("not to you (uid 1000)") != std::string::npos);
  CHECK(p.find("its owner or root removes it: rm /dev/shm/bonsai.1000.web") != std::string::npos);
  // Root is not exempt: a file planted under root's name would switch root's caps off.
  std::string r = segment_owner_problem(65534, 0100600, 0, "/dev/shm/bonsai.0.web", "web");
  CHECK(r.find("uid 65534") != std::string::npos);
  CHECK(r.find("bonsaictl rm --force web") != std::string::npos);
  CHECK(segment_owner_problem(1000, 0100644, 1000).find("mode 0644, not 0600") != std::string::npos);
}

TEST_CASE("ctl: stat says how many processes found no free slot") {
  Prefix prefix;
  auto seg = Segment::open("full", true, ShmScope::Process);
  CHECK(stat_json(stat_snapshot(*seg)).find("\"uncounted_processes\":0") != std::string::npos);
  seg->seg().exited.uncounted.store(3);
  ServiceStat s = stat_snapshot(*seg);
  CHECK(s.uncounted_processes == 3);
  CHECK(stat_json(s).find("\"uncounted_processes\":3") != std::string::npos);
  CHECK(stat_table(s).find("WARNING: 3 processes could not be counted: all 1024 slots were taken") !=
        std::string::npos);
  // A comm with control bytes is shown with '?' (it is untrusted too).
  CHECK(comm_text("a\x1b[2Jb\xff", 16) == "a?[2Jb?");
  CHECK(comm_text("d\xc3\xa9", 16) == "d\xc3\xa9");       // "dé" is a name, not garbage
  CHECK(comm_text("\xc2\x9b" "2J", 16) == "??2J");          // C1 CSI: a terminal escape
  CHECK(comm_text("ab\xe2\x82", 16) == "ab??");             // cut mid-character by the kernel
  CHECK(comm_text("\xc0\xaf", 16) == "??");                 // overlong
}
