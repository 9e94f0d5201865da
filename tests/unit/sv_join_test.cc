// SPDX-License-Identifier: MIT
// Joining a service's running supervisor (abi/sv_join.h): the rendezvous directory is
// named after the segment's owner and prefix, the socket is reached through the open
// directory within sockaddr_un's room whatever the prefix, nothing is named when it does
// not fit, and only a private directory of one's own is used.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/un.h>

#include <cstring>
#include <string>

#include "abi/sv_join.h"

using namespace bonsai;

TEST_CASE("sv_join_dir: prefix and owner's uid, under /dev/shm", "[sv_join]") {
  char buf[160];
  size_t n = sv_join_dir(buf, sizeof buf, "integ12.", 65534);
  REQUIRE(std::string(buf, n) == "/dev/shm/integ12.bonsai-sv.65534.d");
  REQUIRE(buf[n] == '\0');
  n = sv_join_dir(buf, sizeof buf, "", 0);
  REQUIRE(std::string(buf) == "/dev/shm/bonsai-sv.0.d");
  n = sv_join_dir(buf, sizeof buf, nullptr, 4294967295u);
  REQUIRE(std::string(buf, n) == "/dev/shm/bonsai-sv.4294967295.d");
}

TEST_CASE("sv_join_dir: no room, no name", "[sv_join]") {
  char tiny[20];
  REQUIRE(sv_join_dir(tiny, sizeof tiny, "", 1000) == 0);
  // Exactly full (with its NUL) fits.
  char exact[sizeof "/dev/shm/bonsai-sv.1.d"];
  REQUIRE(sv_join_dir(exact, sizeof exact, "", 1) == sizeof exact - 1);
  REQUIRE(sv_join_dir(exact, sizeof exact, "", 10) == 0);
  REQUIRE(sv_join_dir(exact, 0, "", 1) == 0);
}

TEST_CASE("sv_join_via: through the open directory, within sun_path", "[sv_join]") {
  sockaddr_un a{};
  size_t n = sv_join_via(a.sun_path, sizeof a.sun_path, 7, "web");
  REQUIRE(std::string(a.sun_path, n) == "/proc/self/fd/7/web");
  // The longest service name (63) with any descriptor number fits, whatever the prefix.
  std::string longest(63, 's');
  REQUIRE(sv_join_via(a.sun_path, sizeof a.sun_path, 1 << 30, longest.c_str()) > 0);
  REQUIRE(sv_join_via(a.sun_path, sizeof a.sun_path, 3, "") == 0);
  REQUIRE(sv_join_via(a.sun_path, sizeof a.sun_path, 3, nullptr) == 0);
  REQUIRE(sv_join_via(a.sun_path, sizeof a.sun_path, -1, "web") == 0);
  std::string too_long(120, 's');
  REQUIRE(sv_join_via(a.sun_path, sizeof a.sun_path, 3, too_long.c_str()) == 0);
}

TEST_CASE("sv_join_dir_ok: a directory of one's own, closed to others", "[sv_join]") {
  struct stat st{};
  st.st_mode = S_IFDIR | 0700;
  st.st_uid = 1000;
  REQUIRE(sv_join_dir_ok(st, 1000));
  REQUIRE_FALSE(sv_join_dir_ok(st, 0));  // another user's (root's neither)
  st.st_uid = 65534;
  REQUIRE_FALSE(sv_join_dir_ok(st, 1000));  // made first by someone else
  st.st_uid = 1000;
  st.st_mode = S_IFDIR | 0770;
  REQUIRE_FALSE(sv_join_dir_ok(st, 1000));
  st.st_mode = S_IFDIR | 0701;
  REQUIRE_FALSE(sv_join_dir_ok(st, 1000));
  st.st_mode = S_IFREG | 0700;
  REQUIRE_FALSE(sv_join_dir_ok(st, 1000));
  st.st_mode = S_IFLNK | 0700;
  REQUIRE_FALSE(sv_join_dir_ok(st, 1000));
}
