// SPDX-License-Identifier: MIT
// build-flags: -Wl,--no-as-needed -lseccomp
// no_seccomp CMD ARGS...: runs CMD where seccomp() is refused (EPERM), as a container
// policy may do: a filter of its own answers seccomp() and prctl(PR_SET_SECCOMP) with
// EPERM, then execs CMD. For the supervised-mode failure tests.
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: no_seccomp CMD ARGS...\n");
    return 2;
  }
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(seccomp), 0) != 0 ||
      seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_EQ, 22 /* PR_SET_SECCOMP */)) != 0 ||
      seccomp_load(ctx) != 0) {
    perror("no_seccomp: installing the filter");
    return 2;
  }
  execvp(argv[1], argv + 1);
  perror("no_seccomp: exec");
  return 127;
}
