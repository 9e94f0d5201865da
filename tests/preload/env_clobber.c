/* SPDX-License-Identifier: MIT
   env_clobber: writes a little (so there is something to count), then overwrites the
   strings of its environment with zero bytes before it exits, as nginx does when it
   writes its process title over argv and environ (setproctitle). A library that kept
   getenv()'s pointers would see "" at exit. */
#define _GNU_SOURCE
#include <string.h>
#include <unistd.h>

extern char** environ;

int main(void) {
  char buf[512] = {0};
  for (int i = 0; i < 4; ++i)
    if (write(1, buf, 0) < 0) return 1;
  if (!environ) return 0;
  for (char** e = environ; *e; ++e) memset(*e, 0, strlen(*e));
  return 0;
}
