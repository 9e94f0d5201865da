// SPDX-License-Identifier: MIT
// Prints where a service segment's fleet block fields, and the protect-agent's claim,
// are (byte offsets in the segment file, as NAME=OFFSET words), for tests that play a
// tenant rewriting its segment (t_tenant_*.sh). Built by the test against libbonsai/abi.
#include <cstddef>
#include <cstdio>

#include "abi/shm_abi.h"

int main() {
  using namespace bonsai;
  size_t f = offsetof(ShmSegment, fleet);
  size_t p = offsetof(ShmSegment, protect);
  std::printf("enabled=%zu period_ms=%zu store=%zu password_file=%zu cap=%zu namespace=%zu expected_hosts=%zu "
              "controller_pid=%zu controller_start=%zu\n",
              f + offsetof(ShmFleet, enabled), f + offsetof(ShmFleet, period_ms), f + offsetof(ShmFleet, store),
              f + offsetof(ShmFleet, password_file), f + offsetof(ShmFleet, cap),
              f + offsetof(ShmFleet, fleet_namespace), f + offsetof(ShmFleet, expected_hosts),
              p + offsetof(ShmProtect, controller_pid), p + offsetof(ShmProtect, controller_start));
  return 0;
}
