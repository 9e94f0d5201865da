// SPDX-License-Identifier: MIT
// shm/shm_fd: BONSAI_SHM_UID and BONSAI_SHM_FD are taken at set-up. A program may write
// over its environment afterwards (setproctitle), and the owner is asked again at a live
// change (shm_host_attach): the answer must not change with the strings.
#include <catch2/catch.hpp>

#include <cstring>
#include <unistd.h>

#include "shm/shm_fd.h"

using namespace bonsai;

TEST_CASE("shm_fd_configure: the owner survives the environment's strings", "[shm_fd]") {
  char uid[] = "4242";
  char fd[] = "7";
  shm_fd_configure(fd, uid);
  CHECK(shm_owner_uid() == 4242u);
  std::memset(uid, 0, sizeof uid);  // what nginx does to environ
  std::memset(fd, 0, sizeof fd);
  CHECK(shm_owner_uid() == 4242u);
  shm_fd_configure("x1", "-3");  // not numbers: the effective uid
  CHECK(shm_owner_uid() == static_cast<unsigned>(geteuid()));
  shm_fd_configure(nullptr, "4294967295");  // past the largest uid
  CHECK(shm_owner_uid() == static_cast<unsigned>(geteuid()));
  shm_fd_configure(nullptr, nullptr);
  CHECK(shm_owner_uid() == static_cast<unsigned>(geteuid()));
  CHECK(shm_inherited_fd("/dev/shm/none", 0) == -1);
}
