/* SPDX-License-Identifier: MIT
   fork_threads FORKS: a thread keeps write()ing 64 KiB to /dev/null (throttled, so mostly
   waiting inside the wrapper) while main fork()s FORKS times; each child write()s 64 KiB
   and exits; the parent reaps each with a deadline, then stops and joins the thread. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload_util.h"

static atomic_int g_stop;
static char g_buf[65536];
static int g_null;

static void* writer(void* arg) {
  long long* moved = arg;
  while (!atomic_load(&g_stop)) {
    ssize_t w = write(g_null, g_buf, sizeof g_buf);
    if (w != (ssize_t)sizeof g_buf) die("thread write");
    *moved += w;
  }
  return NULL;
}

int main(int argc, char** argv) {
  int forks = argc > 1 ? atoi(argv[1]) : 5;
  g_null = open("/dev/null", O_WRONLY);
  if (g_null < 0) die("open");
  long long moved = 0;
  pthread_t th;
  double t0 = now_s();
  if (pthread_create(&th, NULL, writer, &moved)) die("pthread_create");
  for (int i = 0; i < forks; ++i) {
    usleep(100000);
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
      if (write(g_null, g_buf, sizeof g_buf) != (ssize_t)sizeof g_buf) _exit(3);
      exit(0); /* exit(), not _exit(): the child's BONSAI_STATS line is written */
    }
    int status = 0;
    double deadline = now_s() + 10;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (now_s() > deadline) {
        kill(pid, SIGKILL);
        die("child %d hung after fork", i);
      }
      usleep(2000);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("child %d failed: status %d", i, status);
  }
  atomic_store(&g_stop, 1);
  pthread_join(th, NULL);
  printf("forks=%d ", forks);
  report(moved, now_s() - t0);
  return 0;
}
