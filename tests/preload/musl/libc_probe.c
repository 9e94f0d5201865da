/* SPDX-License-Identifier: MIT
   libc_probe: a program of another libc, built by musl-gcc (issue #48): the library's
   musl build is tested with it in a root that holds only the musl loader.
     libc_probe copy SRC DST   read/write 64 KiB at a time; prints "bytes=N secs=S"
     libc_probe stdio SRC DST  the same with fread/fwrite (musl's stdio makes its own
                               system calls: the library limits the stdio calls)
     libc_probe say TEXT CODE  prints TEXT and exits with CODE (sh -c 'echo ok; exit 3')
     libc_probe exec PROG ARG...  executes PROG (the environment handed down)
     libc_probe env NAME=VALUE... PROG ARG...  as env(1): a root with nothing else in it
     libc_probe getenv NAME    prints NAME's value ("" when unset)
     libc_probe pause SECS     sleeps (stat looks at it meanwhile) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char g_buf[1 << 16];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int die(const char* what) {
  perror(what);
  return 1;
}

static int copy_rw(const char* src, const char* dst) {
  int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (in < 0 || out < 0) return die("open");
  long long moved = 0;
  double t0 = now_s();
  ssize_t r;
  while ((r = read(in, g_buf, sizeof g_buf)) > 0) {
    for (ssize_t done = 0; done < r;) {
      ssize_t w = write(out, g_buf + done, (size_t)(r - done));
      if (w <= 0) return die("write");
      done += w;
    }
    moved += r;
  }
  if (r < 0) return die("read");
  printf("bytes=%lld secs=%.4f\n", moved, now_s() - t0);
  return close(in) || close(out);
}

static int copy_stdio(const char* src, const char* dst) {
  FILE* in = fopen(src, "rb");
  FILE* out = fopen(dst, "wb");
  if (!in || !out) return die("fopen");
  long long moved = 0;
  double t0 = now_s();
  size_t r;
  while ((r = fread(g_buf, 1, sizeof g_buf, in)) > 0) {
    if (fwrite(g_buf, 1, r, out) != r) return die("fwrite");
    moved += (long long)r;
  }
  if (ferror(in)) return die("fread");
  if (fclose(out)) return die("fclose");
  printf("bytes=%lld secs=%.4f\n", moved, now_s() - t0);
  return fclose(in);
}

int main(int argc, char** argv) {
  if (argc >= 4 && !strcmp(argv[1], "copy")) return copy_rw(argv[2], argv[3]);
  if (argc >= 4 && !strcmp(argv[1], "stdio")) return copy_stdio(argv[2], argv[3]);
  if (argc >= 4 && !strcmp(argv[1], "say")) {
    printf("%s\n", argv[2]);
    return atoi(argv[3]);
  }
  if (argc >= 3 && !strcmp(argv[1], "exec")) {
    execv(argv[2], argv + 2);
    return die("execv");
  }
  if (argc >= 3 && !strcmp(argv[1], "env")) {
    int i = 2;
    for (; i < argc && strchr(argv[i], '='); ++i) putenv(argv[i]);
    if (i == argc) return 2;
    execv(argv[i], argv + i);
    return die("execv");
  }
  if (argc >= 3 && !strcmp(argv[1], "pause")) {
    sleep((unsigned)atoi(argv[2]));
    return 0;
  }
  if (argc >= 3 && !strcmp(argv[1], "getenv")) {
    const char* v = getenv(argv[2]);
    printf("%s\n", v ? v : "");
    return 0;
  }
  fprintf(stderr, "usage: libc_probe copy|stdio SRC DST | say TEXT CODE | exec PROG ARG... | "
                  "env NAME=VALUE... PROG ARG... | getenv NAME | pause SECS\n");
  return 2;
}
