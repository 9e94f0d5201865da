// Moves 4 MiB into a pipe with vmsplice, named or through syscall(SYS_vmsplice)
// (argv[1]: named | syscall), looping on short results as callers must; a child drains
// the pipe and checks the byte count. Prints "bytes=N secs=S".
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TOTAL (4L << 20)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  int use_syscall = argc > 1 && strcmp(argv[1], "syscall") == 0;
  int p[2];
  if (pipe(p) != 0) return 2;
  pid_t child = fork();
  if (child == 0) {
    close(p[1]);
    static char sink[65536];
    long got = 0;
    ssize_t r;
    while ((r = read(p[0], sink, sizeof sink)) > 0) got += r;
    _exit(got == TOTAL ? 0 : 3);
  }
  close(p[0]);
  char* buf = aligned_alloc(4096, TOTAL);
  if (!buf) return 2;
  memset(buf, 'v', TOTAL);
  double t0 = now();
  long done = 0;
  for (int guard = 0; done < TOTAL && guard < 1000000; ++guard) {
    struct iovec v = {buf + done, (size_t)(TOTAL - done)};
    ssize_t r = use_syscall ? syscall(SYS_vmsplice, p[1], &v, 1, 0) : vmsplice(p[1], &v, 1, 0);
    if (r <= 0) { perror("vmsplice"); return 4; }
    done += r;
  }
  double secs = now() - t0;
  close(p[1]);
  int st;
  waitpid(child, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return 5;
  printf("bytes=%ld secs=%.3f\n", done, secs);
  return 0;
}
