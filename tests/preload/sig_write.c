/* SPDX-License-Identifier: MIT
   sig_write OUT SIGOUT BYTES: main write()s BYTES to OUT in 64 KiB calls while SIGALRM
   fires every 5 ms; the handler (no SA_RESTART) write()s a 16-byte record to SIGOUT.
   Checks every main write completes, every record arrives; reports bytes and seconds. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "preload_util.h"

static int g_sigfd;
static volatile sig_atomic_t g_handled, g_bad;

static void on_alarm(int sig) {
  (void)sig;
  int saved = errno;
  static const char rec[16] = "signal-record-0\n";
  if (write(g_sigfd, rec, sizeof rec) != (ssize_t)sizeof rec) g_bad = 1;
  g_handled++;
  errno = saved;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s OUT SIGOUT BYTES\n", argv[0]);
    return 2;
  }
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  g_sigfd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  if (fd < 0 || g_sigfd < 0) die("open");
  long long total = size_arg(argv[3]);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;  /* no SA_RESTART: an interrupted wait must not leak EINTR */
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 5000}, {0, 5000}};
  static char buf[65536];
  memset(buf, 'w', sizeof buf);
  double t0 = now_s();
  setitimer(ITIMER_REAL, &it, NULL);
  for (long long done = 0; done < total;) {
    size_t n = total - done < (long long)sizeof buf ? (size_t)(total - done) : sizeof buf;
    ssize_t w = write(fd, buf, n);
    if (w < 0) die("write after %lld bytes", done);
    done += w;
  }
  double secs = now_s() - t0;
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  struct stat st;
  if (fstat(g_sigfd, &st)) die("fstat");
  if (g_bad || st.st_size != 16 * (off_t)g_handled)
    die("handler writes: %d signals, %lld bytes", (int)g_handled, (long long)st.st_size);
  if (g_handled < 10) die("only %d signals arrived", (int)g_handled);
  printf("signals=%d ", (int)g_handled);
  report(total, secs);
  return 0;
}
