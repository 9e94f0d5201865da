// SPDX-License-Identifier: MIT
// Issue 8, items 5 and 8: the SIGBUS guard of mapped segments (shm/shm_guard.h) and
// the time-namespace offset of the buckets' clock (shm/shm_clock.h).
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm/shm_clock.h"
#include "shm/shm_guard.h"

using namespace bonsai;

namespace {

// A 4-page shared file mapping. The file is unlinked at once.
struct FileMap {
  int fd = -1;
  char* p = nullptr;
  size_t len = 4 * 4096;
  FileMap() {
    char path[] = "/tmp/bonsai-guard-XXXXXX";
    fd = mkstemp(path);
    REQUIRE(fd >= 0);
    unlink(path);
    REQUIRE(ftruncate(fd, static_cast<off_t>(len)) == 0);
    p = static_cast<char*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    REQUIRE(p != MAP_FAILED);
  }
  ~FileMap() {
    shm_guard_unregister(p);
    munmap(p, len);
    close(fd);
  }
};

volatile sig_atomic_t g_app_calls = 0;
volatile sig_atomic_t g_app_info_calls = 0;
void app_handler(int) { g_app_calls = g_app_calls + 1; }
void app_info_handler(int, siginfo_t* si, void*) {
  if (si && si->si_code <= 0) g_app_info_calls = g_app_info_calls + 1;
}

// Runs `body` in a child; @return its wait status.
template <class F>
int in_child(F body) {
  pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

}  // namespace

TEST_CASE("shm_guard: a fault inside a truncated mapping is survived", "[shm_guard]") {
  FileMap m;
  m.p[3 * 4096] = 'x';
  REQUIRE(shm_guard_register(m.p, m.len));
  CHECK_FALSE(shm_guard_lost(m.p));
  REQUIRE(ftruncate(m.fd, 4096) == 0);
  // Page 3 is past the end of the file now: this store raises SIGBUS.
  static_cast<volatile char*>(m.p)[3 * 4096 + 5] = 'y';
  CHECK(shm_guard_lost(m.p));
  CHECK(static_cast<volatile char*>(m.p)[3 * 4096 + 5] == 'y');  // private memory now
  CHECK(static_cast<volatile char*>(m.p)[3 * 4096] == 0);        // zeroed
  CHECK(m.p[0] == 0);                                            // the whole mapping
}

TEST_CASE("shm_guard: the handler recognises only addresses inside registered mappings", "[shm_guard]") {
  FileMap m;
  REQUIRE(shm_guard_register(m.p, m.len));
  CHECK_FALSE(shm_guard_handle_for_test(m.p + m.len));
  CHECK_FALSE(shm_guard_handle_for_test(m.p - 1));
  CHECK_FALSE(shm_guard_lost(m.p));
  CHECK(shm_guard_handle_for_test(m.p + m.len - 1));
  CHECK(shm_guard_lost(m.p));
  shm_guard_unregister(m.p);
  CHECK_FALSE(shm_guard_handle_for_test(m.p));
}

TEST_CASE("shm_guard: other SIGBUS go to the application's handler", "[shm_guard]") {
  FileMap m;
  REQUIRE(shm_guard_register(m.p, m.len));
  struct sigaction saved{};
  REQUIRE(shm_guard_chained(&saved));

  struct sigaction plain{};
  plain.sa_handler = app_handler;
  sigemptyset(&plain.sa_mask);
  REQUIRE(shm_guard_set_chained(plain));
  g_app_calls = 0;
  raise(SIGBUS);
  CHECK(g_app_calls == 1);

  struct sigaction info{};
  info.sa_sigaction = app_info_handler;
  info.sa_flags = SA_SIGINFO;
  sigemptyset(&info.sa_mask);
  REQUIRE(shm_guard_set_chained(info));
  g_app_info_calls = 0;
  raise(SIGBUS);
  CHECK(g_app_info_calls == 1);

  struct sigaction ign{};
  ign.sa_handler = SIG_IGN;
  REQUIRE(shm_guard_set_chained(ign));
  raise(SIGBUS);  // ignored, as the application asked
  CHECK_FALSE(shm_guard_lost(m.p));

  shm_guard_set_chained(saved);
}

TEST_CASE("shm_guard: with no application handler, other SIGBUS still kill", "[shm_guard]") {
  FileMap m;
  REQUIRE(shm_guard_register(m.p, m.len));
  // A sent SIGBUS.
  int status = in_child([] {
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    shm_guard_set_chained(dfl);
    raise(SIGBUS);
    _exit(3);
  });
  CHECK(WIFSIGNALED(status));
  if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == SIGBUS);
  // A real fault in an unguarded mapping.
  status = in_child([] {
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    shm_guard_set_chained(dfl);
    FileMap other;
    REQUIRE(ftruncate(other.fd, 0) == 0);
    static_cast<volatile char*>(other.p)[100] = 1;
    _exit(3);
  });
  CHECK(WIFSIGNALED(status));
  if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == SIGBUS);
  // A fault in the guarded one is survived, in the child too.
  int fd = m.fd;
  char* p = m.p;
  status = in_child([fd, p] {
    if (ftruncate(fd, 0) != 0) _exit(4);
    static_cast<volatile char*>(p)[100] = 1;
    _exit(shm_guard_lost(p) ? 0 : 5);
  });
  CHECK(WIFEXITED(status));
  if (WIFEXITED(status)) CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("shm_clock: timens_offsets parsing", "[shm_clock]") {
  CHECK(timens_mono_offset_parse("monotonic     100000         0\nboottime  0 0\n") == 100'000'000'000'000);
  CHECK(timens_mono_offset_parse("boottime 5 0\nmonotonic 1 500\n") == 1'000'000'500);
  CHECK(timens_mono_offset_parse("monotonic -2 500000000\n") == -1'500'000'000);
  CHECK(timens_mono_offset_parse("1 7 0\n") == 7'000'000'000);
  CHECK(timens_mono_offset_parse("") == 0);
  CHECK(timens_mono_offset_parse("monotonic x 0\n") == 0);
  CHECK(timens_mono_offset_parse("monotonic 1 1000000000\n") == 0);
  CHECK(timens_mono_offset_parse("monotonic 99999999999999999999999 0\n") == 0);
  CHECK(timens_mono_offset_parse("monotonicx 5 0\n") == 0);
  // This process: in the host's namespace on CI (or whatever it is, never a crash).
  int64_t self = timens_mono_offset_read();
  CHECK(self > -(int64_t{1} << 62));
  CHECK(self < (int64_t{1} << 62));
}
