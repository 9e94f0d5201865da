// SPDX-License-Identifier: MIT
// Unit tests of bonsaictl/run_env: LD_PRELOAD composition (ours first, nothing
// dropped), PATH resolution, the static/setuid warnings on real binaries of this
// system, and merging -l rules into a file's limits.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

#include "launch/launch_kind.h"
#include "config/limits_merge.h"
#include "launch/run_env.h"
#include "abi/limit_parse.h"

using namespace bonsai;
using namespace bonsai::ctl;

namespace {

LimitSet parse(const char* text) {
  LimitSet s{};
  ParseError err;
  REQUIRE(limit_parse(text, s, err));
  return s;
}

std::string format(const LimitSet& s) {
  std::string out;
  for (uint32_t i = 0; i < s.count; ++i) {
    char buf[256];
    rule_format(s.rules[i], buf, sizeof buf);
    out += (out.empty() ? "" : ",") + std::string(buf);
  }
  return out;
}

bool exists(const char* p) {
  struct stat st;
  return stat(p, &st) == 0;
}

}  // namespace

TEST_CASE("run: libbonsai goes in front of LD_PRELOAD and nothing there is dropped") {
  CHECK(preload_value("/b/libbonsai.so", "") == "/b/libbonsai.so");
  CHECK(preload_value("/b/libbonsai.so", "/x/libfoo.so") == "/b/libbonsai.so:/x/libfoo.so");
  CHECK(preload_value("/b/libbonsai.so", "/x/a.so /y/b.so") == "/b/libbonsai.so:/x/a.so:/y/b.so");
  CHECK(preload_value("/b/libbonsai.so", "/x/a.so:/b/libbonsai.so") == "/b/libbonsai.so:/x/a.so");
  CHECK(preload_value("/b/libbonsai.so", "::/x/a.so::") == "/b/libbonsai.so:/x/a.so");
}

TEST_CASE("run --supervise: every libbonsai.so leaves LD_PRELOAD, the rest stays in order") {
  CHECK(preload_without_bonsai("") == "");
  CHECK(preload_without_bonsai("/b/libbonsai.so") == "");
  CHECK(preload_without_bonsai("/x/a.so /b/libbonsai.so:libbonsai.so /y/b.so") == "/x/a.so:/y/b.so");
  CHECK(preload_without_bonsai("::/x/libbonsai.so.1::/x/mylibbonsai.so") == "/x/libbonsai.so.1:/x/mylibbonsai.so");
}

TEST_CASE("run: commands resolve through PATH like execvp") {
  CHECK(command_resolve("sh").find("/sh") != std::string::npos);
  CHECK(command_resolve("/bin/sh") == "/bin/sh");
  CHECK(command_resolve("no-such-command-bonsai").empty());
  CHECK(command_resolve("/nonexistent/x").empty());
}

TEST_CASE("run: static and setuid programs are named in a plain warning") {
  CHECK(preload_warning(command_resolve("sh")).empty());  // dynamic
  CHECK(preload_warning(command_resolve("dd")).empty());
  if (exists("/sbin/ldconfig")) {  // statically linked on Debian
    std::string w = preload_warning("/sbin/ldconfig");
    CHECK(w.find("statically linked") != std::string::npos);
    CHECK(w.find("NO LIMITS WILL APPLY") != std::string::npos);
  }
  // A setuid-root program: LD_PRELOAD is dropped for anyone but root, whose exec of it
  // changes no id (the library reaches it: no warning, the facts say it is capped).
  for (const char* p : {"/usr/bin/passwd", "/usr/bin/su", "/bin/mount"})
    if (exists(p)) {
      if (geteuid() == 0) CHECK(preload_warning(p).empty());
      else CHECK(preload_warning(p).find("setuid") != std::string::npos);
      break;
    }
  // A script is judged by its interpreter.
  char path[] = "/tmp/bonsai-ctl-test-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  const char script[] = "#!/sbin/ldconfig -p\n";
  REQUIRE(write(fd, script, sizeof script - 1) == static_cast<ssize_t>(sizeof script - 1));
  close(fd);
  if (exists("/sbin/ldconfig")) CHECK(preload_warning(path).find("runs /sbin/ldconfig") != std::string::npos);
  unlink(path);
}

TEST_CASE("run: -l rules go over the file's; a file rule keeps the calls they leave it") {
  LimitSet base = parse("read+pread=10MiB/s,writes=8MB/s,openat=200/s");
  std::string why;
  REQUIRE(limits_merge(base, parse("pread=1MiB/s"), why));
  CHECK(format(base) == "read=10MiB/s,writes=8MB/s,openat=200/s,pread=1MiB/s");
  REQUIRE(limits_merge(base, parse("unlink=5/s"), why));
  CHECK(format(base) == "read=10MiB/s,writes=8MB/s,openat=200/s,pread=1MiB/s,unlink=5/s");
  LimitSet big{};
  for (uint32_t i = 0; i < kMaxRules; ++i) big.rules[big.count++] = parse("read=1MB/s").rules[0];
  LimitSet none = parse("write=1MB/s");
  CHECK_FALSE(limits_merge(none, big, why));
  CHECK(!why.empty());
}

TEST_CASE("run: BONSAI_LIB is made absolute", "[ctl][run]") {
  char dir[] = "/tmp/bonsai-lib.XXXXXX";
  REQUIRE(mkdtemp(dir));
  std::string lib = std::string(dir) + "/libbonsai.so";
  FILE* f = fopen(lib.c_str(), "w");
  REQUIRE(f);
  fclose(f);
  char cwd[4096];
  REQUIRE(getcwd(cwd, sizeof cwd));
  REQUIRE(chdir(dir) == 0);
  setenv("BONSAI_LIB", "./libbonsai.so", 1);
  std::string found = library_find();
  unsetenv("BONSAI_LIB");
  REQUIRE(chdir(cwd) == 0);
  CHECK(found == lib);
  unlink(lib.c_str());
  rmdir(dir);
}

TEST_CASE("run: warns when a privilege-dropping child could not load the library", "[ctl][run]") {
  char dir[] = "/tmp/bonsai-priv.XXXXXX";
  REQUIRE(mkdtemp(dir));  // mode 0700: not searchable by others
  std::string lib = std::string(dir) + "/libbonsai.so";
  FILE* f = fopen(lib.c_str(), "w");
  REQUIRE(f);
  fclose(f);
  chmod(lib.c_str(), 0644);
  CHECK(privdrop_warning(lib, 1000).empty());  // not root: nothing to drop
  CHECK(privdrop_warning(lib, 0).find("drops privileges") != std::string::npos);
  chmod(dir, 0755);
  CHECK(privdrop_warning(lib, 0).empty());
  chmod(lib.c_str(), 0600);
  CHECK(privdrop_warning(lib, 0).find("not readable") != std::string::npos);
  unlink(lib.c_str());
  rmdir(dir);
}

TEST_CASE("run: --io-uring wins over the file's io_uring; neither leaves BONSAI_IO_URING alone", "[ctl][run]") {
  auto value = [] {
    const char* v = std::getenv("BONSAI_IO_URING");
    return std::string(v ? v : "(unset)");
  };
  unsetenv("BONSAI_IO_URING");
  CHECK(io_uring_export("", ""));
  CHECK(value() == "(unset)");
  CHECK(io_uring_export("", "deny"));
  CHECK(value() == "deny");
  CHECK(io_uring_export("allow", "deny"));  // also overrides an inherited deny
  CHECK(value() == "allow");
  CHECK(io_uring_export("deny", "allow"));
  CHECK(value() == "deny");
  CHECK_FALSE(io_uring_export("off", ""));
  CHECK(value() == "deny");  // unchanged
  unsetenv("BONSAI_IO_URING");
}
