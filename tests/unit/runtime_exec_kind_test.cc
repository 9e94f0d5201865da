// SPDX-License-Identifier: MIT
// runtime/exec_kind.h: the judgement the exec wrappers make before a service process
// executes a program (issue #40): dynamic, static, Go, setuid, other; and the PATH walk.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/exec_kind.h"

using namespace bonsai;

namespace {

std::string temp_file(const std::string& text, mode_t mode) {
  char name[] = "/tmp/bonsai-exec-kind-XXXXXX";
  int fd = mkstemp(name);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(fd);
  chmod(name, mode);
  return name;
}

}  // namespace

TEST_CASE("exec_kind_of tells dynamic, static, scripts and missing files apart", "[exec_kind]") {
  CHECK(exec_kind_of("/proc/self/exe") == ExecKind::Dynamic);  // the test binary
  CHECK(exec_kind_of("/no/such/file") == ExecKind::Other);
  CHECK(exec_kind_of("/tmp") == ExecKind::Other);
  CHECK(exec_kind_of(nullptr) == ExecKind::Other);
  std::string junk = temp_file("not a program\n", 0755);
  CHECK(exec_kind_of(junk.c_str()) == ExecKind::Other);
  std::string dyn_script = temp_file("#!/proc/self/exe -x\n", 0755);
  CHECK(exec_kind_of(dyn_script.c_str()) == ExecKind::Dynamic);
  std::string rel_script = temp_file("#!sh\n", 0755);
  CHECK(exec_kind_of(rel_script.c_str()) == ExecKind::Other);
  std::string setuid = temp_file("#!/bin/sh\n", 04755);
  // The caller's own setuid program changes no id at exec: judged by its interpreter.
  CHECK(exec_kind_of(setuid.c_str()) == ExecKind::Dynamic);
  if (geteuid() == 0 && chown(setuid.c_str(), 65534, static_cast<gid_t>(-1)) == 0 && chmod(setuid.c_str(), 04755) == 0)
    CHECK(exec_kind_of(setuid.c_str()) == ExecKind::Setuid);
  if (access("/bin/busybox", X_OK) == 0 && system("file -L /bin/busybox | grep -q 'statically linked'") == 0) {
    CHECK(exec_kind_of("/bin/busybox") == ExecKind::Static);
    std::string bb_script = temp_file("#! /bin/busybox sh\necho\n", 0755);
    CHECK(exec_kind_of(bb_script.c_str()) == ExecKind::Static);
    unlink(bb_script.c_str());
  }
  for (const auto& f : {junk, dyn_script, rel_script, setuid}) unlink(f.c_str());
}

TEST_CASE("exec_path_find walks PATH as execvp does", "[exec_kind]") {
  char buf[4096];
  CHECK(std::string(exec_path_find("sh", "/no/such/dir::/bin", buf, sizeof buf)) == "/bin/sh");
  CHECK(exec_path_find("bonsai-no-such-program", "/bin:/usr/bin", buf, sizeof buf) == nullptr);
  const char* with_slash = "./x/y";
  CHECK(exec_path_find(with_slash, "/bin", buf, sizeof buf) == with_slash);
  CHECK(exec_path_find("sh", "/bin", buf, 6) == nullptr);  // "/bin/sh" does not fit: not found, no overflow
  CHECK(exec_path_find("", "/bin", buf, sizeof buf) == nullptr);
}
