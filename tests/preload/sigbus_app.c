// A program that installs its own SIGBUS handler after start-up (as JVMs and databases
// do), then: (1) faults on a truncated mapping of its own -> its handler must run;
// (2) has its service segment truncated under it while writing -> it must survive, its
// handler must not see the segment's fault. argv[1]: segment path; argv[2]: sigaction
// or signal (how the handler is installed). Prints "app_faults=N bytes=N" and exits 0.
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static sigjmp_buf g_jump;
static volatile sig_atomic_t g_app_faults;

static void on_bus_info(int sig, siginfo_t* si, void* ctx) {
  (void)sig, (void)si, (void)ctx;
  g_app_faults++;
  siglongjmp(g_jump, 1);
}
static void on_bus_plain(int sig) {
  (void)sig;
  g_app_faults++;
  siglongjmp(g_jump, 1);
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  int use_signal = strcmp(argv[2], "signal") == 0;
  if (use_signal) {
    if (signal(SIGBUS, on_bus_plain) == SIG_ERR) return 3;
    if (signal(SIGBUS, on_bus_plain) != on_bus_plain) { fprintf(stderr, "signal() did not return ours\n"); return 4; }
  } else {
    struct sigaction sa, back;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_bus_info;
    sa.sa_flags = SA_SIGINFO;
    if (sigaction(SIGBUS, &sa, NULL) != 0) return 3;
    if (sigaction(SIGBUS, NULL, &back) != 0 || back.sa_sigaction != on_bus_info) {
      fprintf(stderr, "sigaction() did not return ours\n");
      return 4;
    }
  }
  // (1) A fault of the application's own: its handler runs.
  char tmpl[] = "/tmp/sigbus_app.XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0 || ftruncate(fd, 8192) != 0) return 5;
  volatile char* m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return 5;
  if (ftruncate(fd, 0) != 0) return 5;
  if (sigsetjmp(g_jump, 1) == 0) m[4096] = 1;
  unlink(tmpl);
  if (g_app_faults != 1) { fprintf(stderr, "own fault: handler ran %d times\n", (int)g_app_faults); return 6; }
  // (2) The segment truncated under us while writing: we go on, our handler unbothered.
  int out = open("/dev/null", O_WRONLY);
  static char buf[4096];
  long long bytes = 0;
  for (int i = 0; i < 1024; ++i) {
    if (i == 256 && truncate(argv[1], 4096) != 0) { perror("truncate"); return 7; }
    ssize_t r = write(out, buf, sizeof buf);
    if (r < 0) return 8;
    bytes += r;
  }
  printf("app_faults=%d bytes=%lld\n", (int)g_app_faults, bytes);
  return g_app_faults == 1 ? 0 : 9;
}
