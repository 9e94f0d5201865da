// SPDX-License-Identifier: MIT
// Segment fuzzer, bonsaictl's side (issue 8, item 3): a valid segment under a private
// BONSAI_SHM_PREFIX gets every 8-byte word of its header, limits, exited block and
// first slots overwritten in turn with hostile values, then random byte corruptions,
// then truncations; each time bonsaictl's read paths run on it (the stat snapshot,
// `stat`, `ls`, `set --merge`). None may crash, hang or act on out-of-range values;
// the words bonsaictl depends on must be reported as damage (exit 1) with the way to
// recover, and `rm --force` must always remove the file. Bounded: a few seconds.
#include <catch2/catch.hpp>

#include "test_scale.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "cmd/commands.h"
#include "segment/shm_client.h"
#include "stat/stat_snapshot.h"
#include "abi/limit_parse.h"
#include "shm/shm_proc.h"
#include "shm/shm_slots.h"

using namespace bonsai;
using namespace bonsai::ctl;

namespace {

// Runs bonsaictl with stdout silenced and stderr captured. @return its exit status.
int run_ctl(std::vector<std::string> args, std::string* err = nullptr) {
  args.insert(args.begin(), "bonsaictl");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout), std::fflush(stderr);
  char path[] = "/tmp/bonsai-fuzz-err.XXXXXX";
  int cap = mkstemp(path);
  unlink(path);
  int out = dup(1), olderr = dup(2), null = open("/dev/null", O_WRONLY);
  dup2(null, 1), dup2(cap, 2);
  int rc = ctl_main(static_cast<int>(args.size()), argv.data());
  std::fflush(stdout), std::fflush(stderr);
  dup2(out, 1), dup2(olderr, 2);
  close(out), close(olderr), close(null);
  if (err) {
    err->clear();
    char buf[4096];
    ssize_t n;
    lseek(cap, 0, SEEK_SET);
    while ((n = read(cap, buf, sizeof buf)) > 0) err->append(buf, static_cast<size_t>(n));
  }
  close(cap);
  return rc;
}

struct Prefix {
  Prefix() { setenv("BONSAI_SHM_PREFIX", ("ctlfuzz" + std::to_string(getpid()) + ".").c_str(), 1); }
  ~Prefix() {
    for (const auto& s : services_list()) segment_remove(s, true);
    unsetenv("BONSAI_SHM_PREFIX");
  }
};

LimitSet parse(const char* text) {
  LimitSet set{};
  ParseError err;
  REQUIRE(limit_parse(text, set, err));
  return set;
}

// The region the fuzzer corrupts and restores: everything before the slots, and
// the first two slots (one held by this process).
constexpr size_t kRegion = offsetof(ShmSegment, slots) + 2 * sizeof(ShmSlot);

struct Outcome {
  bool snapshot_ok = false;
  int stat_rc = 0, ls_rc = 0, merge_rc = 0;
  std::string stat_err;
};

// Every read path on the segment as it is now. Asserts that whatever is accepted
// is in range.
Outcome exercise(const std::string& service, bool with_ls = true) {
  Outcome o;
  try {
    auto seg = Segment::open(service, false);
    ServiceStat s = stat_snapshot(*seg);
    o.snapshot_ok = true;
    CHECK(s.limits.count <= kMaxRules);
    CHECK((s.scope == ShmScope::Process || s.scope == ShmScope::Service));
    for (const auto& p : s.processes) CHECK((p.pid > 0 && p.pid <= 4194304));
    CHECK(s.processes.size() <= kMaxSlots);
    CHECK(limits_text(s.limits).size() == s.limits.count);
  } catch (const CtlError& e) {
    CHECK(e.code == kExitRuntime);
  }
  o.stat_rc = run_ctl({"stat", service, "--json"}, &o.stat_err);
  o.ls_rc = with_ls ? run_ctl({"ls"}) : (o.stat_rc == 1 ? 1 : 0);
  o.merge_rc = run_ctl({"set", "--merge", service, "read=1MiB/s"});
  CHECK((o.stat_rc == 0 || o.stat_rc == 1));
  CHECK((o.ls_rc == 0 || o.ls_rc == 1));
  CHECK((o.merge_rc == 0 || o.merge_rc == 1 || o.merge_rc == 2));  // 2: the merge holds too many rules
  if (o.stat_rc == 1) {
    CHECK(o.stat_err.find("bonsaictl rm --force " + service) != std::string::npos);
    CHECK(o.ls_rc == 1);
  }
  return o;
}

struct Fixture {
  Prefix prefix;
  std::string service = "fz";
  std::string path;
  std::vector<unsigned char> pristine = std::vector<unsigned char>(kRegion);
  ShmSectionDir pristine_dir{};  // the section directory after the base (layout 15)
  int fd = -1;

  Fixture() {
    auto seg = Segment::open(service, true, ShmScope::Service);
    seg->write_limits(parse("write=1MiB/s,openat=10/s"));
    uint64_t start;
    REQUIRE(proc_status(getpid(), start) == ProcStatus::Alive);
    ShmSlot* slot = slot_claim(seg->seg(), getpid(), start, "fuzz", 2, 0);
    REQUIRE(slot);
    slot->counters.lanes[0].by_call[static_cast<size_t>(CallId::write)].calls = 3;
    path = seg->path();
    fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(pread(fd, pristine.data(), kRegion, 0) == static_cast<ssize_t>(kRegion));
    REQUIRE(pread(fd, &pristine_dir, sizeof pristine_dir, kShmDirOffset) == sizeof pristine_dir);
  }
  ~Fixture() { close(fd); }
  void restore() {
    REQUIRE(ftruncate(fd, kShmMadeSize) == 0);
    REQUIRE(pwrite(fd, pristine.data(), kRegion, 0) == static_cast<ssize_t>(kRegion));
    REQUIRE(pwrite(fd, &pristine_dir, sizeof pristine_dir, kShmDirOffset) == sizeof pristine_dir);
  }
  void put64(size_t off, uint64_t v) { REQUIRE(pwrite(fd, &v, 8, static_cast<off_t>(off)) == 8); }
  uint64_t get64(size_t off) {
    uint64_t v = 0;
    REQUIRE(pread(fd, &v, 8, static_cast<off_t>(off)) == 8);
    return v;
  }
};

}  // namespace

TEST_CASE("ctl fuzz: a pristine segment reads clean") {
  Fixture f;
  Outcome o = exercise(f.service);
  CHECK(o.snapshot_ok);
  CHECK(o.stat_rc == 0);
  CHECK(o.ls_rc == 0);
  CHECK(o.merge_rc == 0);
}

TEST_CASE("ctl fuzz: every 8-byte word of header, limits, exited block and slots swept") {
  Fixture f;
  std::vector<size_t> words;
  for (size_t off = 0; off < offsetof(ShmSegment, buckets); off += 8) words.push_back(off);  // header, limits
  for (size_t off = offsetof(ShmSegment, exited); off < offsetof(ShmSegment, exited) + 64; off += 8)
    words.push_back(off);
  for (size_t off = offsetof(ShmSegment, slots); off < offsetof(ShmSegment, slots) + 64; off += 8) words.push_back(off);
  size_t seq_off = offsetof(ShmSegment, limits) + offsetof(ShmLimits, seq);
  size_t count_off = offsetof(ShmSegment, limits) + offsetof(ShmLimits, set) + offsetof(LimitSet, count);
  // Words whose damage bonsaictl must see: magic, version+max_slots, fingerprint,
  // scope+uid, the rule count. Not the size: in a layout this build knows it places only
  // the sections after the base, so a damaged one costs the sections (the base is used
  // alone, `stat` warns), not the service.
  std::vector<size_t> must_report = {0, 8, 24, 32, count_off};
  std::mt19937_64 rng(8);
  unsigned reported = 0, runs = 0;
  for (size_t off : words) {
    f.restore();
    uint64_t orig = f.get64(off);
    std::vector<uint64_t> values = {0, ~uint64_t{0}, orig ^ 1, orig ^ (uint64_t{1} << 63), rng()};
    // Sanitized builds: one value a word, out of range or near in turn (all ones for the
    // words whose damage must be reported).
    bool must_word = false;
    for (size_t m : must_report) must_word = must_word || m == off;
    if (bonsai::test::kSanitized) values = {must_word || (off / 8) % 2 ? ~uint64_t{0} : orig ^ 1};
    if (off == seq_off) values = {0, 3};  // an odd one takes the 300 ms given to a dead writer
    for (uint64_t v : values) {
      if (v == orig) continue;
      f.restore();
      f.put64(off, v);
      INFO("word at offset " << off << " := " << v);
      Outcome o = exercise(f.service, runs % 8 == 0);
      ++runs;
      reported += o.stat_rc == 1;
      bool must = false;
      for (size_t m : must_report) must = must || m == off;
      // Zero is a valid scope (process) with a valid uid for root, and a valid rule count.
      if (v == 0 && off == 32) must = false;
      // The count's word holds padding too; fewer rules than written are still valid.
      if (off == count_off) must = static_cast<uint32_t>(v) > static_cast<uint32_t>(orig);
      if (must) {
        CHECK(o.stat_rc == 1);
        CHECK_FALSE(o.snapshot_ok);
        CHECK(o.merge_rc == 1);
      }
    }
  }
  f.restore();
  CHECK(runs > (bonsai::test::kSanitized ? 120u : 300u));
  CHECK(reported >= (bonsai::test::kSanitized ? 5u : 51u));  // sanitized: the must-report words at least
  // The case: a rule count past the table made `set --merge` overflow its stack.
  f.put64(count_off, 200);
  std::string err;
  CHECK(run_ctl({"set", "--merge", f.service, "read=1MiB/s"}, &err) == 1);
  CHECK(err.find("is damaged: its limits hold 200 rules") != std::string::npos);
  CHECK(err.find("bonsaictl rm --force fz") != std::string::npos);
  CHECK(run_ctl({"rm", "--force", f.service}) == 0);
  struct stat st;
  CHECK(stat(f.path.c_str(), &st) != 0);
}

TEST_CASE("ctl fuzz: random corruptions, then truncations; rm --force always works") {
  Fixture f;
  std::mt19937_64 rng(1234);
  auto t0 = std::chrono::steady_clock::now();
  unsigned runs = 0;
  size_t seq_off = offsetof(ShmSegment, limits) + offsetof(ShmLimits, seq);
  while (runs < 300 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(4)) {
    f.restore();
    unsigned n = 1 + static_cast<unsigned>(rng() % 8);
    for (unsigned i = 0; i < n; ++i) {
      size_t off = rng() % kRegion;
      if (off >= seq_off && off < seq_off + 8) continue;  // swept above (slow when odd)
      unsigned char b = static_cast<unsigned char>(rng());
      REQUIRE(pwrite(f.fd, &b, 1, static_cast<off_t>(off)) == 1);
    }
    exercise(f.service, runs % 8 == 0);
    ++runs;
  }
  CHECK(runs >= 50);
  // Truncated files: refused before anything is mapped or read.
  for (off_t size : {off_t{0}, off_t{100}, off_t{4096}, static_cast<off_t>(sizeof(ShmSegment) - 1),
                      static_cast<off_t>(kShmMadeSize - 1)}) {
    f.restore();
    REQUIRE(ftruncate(f.fd, size) == 0);
    INFO("size " << size);
    std::string err;
    CHECK(run_ctl({"stat", f.service}, &err) == 1);
    CHECK(err.find("truncated") != std::string::npos);
    CHECK(run_ctl({"set", "--merge", f.service, "read=1MiB/s"}) == 1);
  }
  // Truncated under an open handle (stat --watch): the size is checked again first.
  f.restore();
  auto seg = Segment::open(f.service, false);
  CHECK_NOTHROW(stat_snapshot(*seg));
  REQUIRE(ftruncate(f.fd, 4096) == 0);
  CHECK_THROWS_AS(stat_snapshot(*seg), CtlError);
  CHECK_THROWS_AS(seg->live_processes(), CtlError);
  CHECK(run_ctl({"rm", f.service}) == 1);  // unusable: only --force
  CHECK(run_ctl({"rm", "--force", f.service}) == 0);
  CHECK(seg->file_state() == FileState::Removed);
}
