// SPDX-License-Identifier: MIT
// The container supervisor's own program (build/cdi/bonsaictl, linked static: the Makefile,
// docs/reference/containers.md): `sv-exec` and nothing else of bonsaictl, so that a
// bonsai.dev/service device mounts this one file and no library of the host's.
#include <cstdio>
#include <cstring>

#include "base/diag.h"
#include "launch/sv_exec.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "sv-exec") == 0) return bonsai::ctl::sv_exec_main(argc - 2, argv + 2);
  std::fputs("usage: bonsaictl sv-exec PROGRAM [ARGS...] (the supervisor for containers: docs/reference/containers.md)\n", stderr);
  return bonsai::ctl::kExitUsage;
}
