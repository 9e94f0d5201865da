// Zero-copy copies out of a file (issue 18 item 1: the source side is charged as a read).
// usage: zc_copy MODE FILE [PORT]
//   sendfile, sendfile_sys: sendfile(2) (with an offset pointer) of FILE to 127.0.0.1:PORT
//   splice, splice_sys:     splice(2) (file position, no offset pointer) of FILE into a
//                           pipe a child drains with read()
// `_sys` makes the same call through syscall(SYS_...). Loops on short results as callers
// must. Prints "bytes=N secs=S".
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const char* mode = argv[1];
  int sys = strstr(mode, "_sys") != NULL;
  int in = open(argv[2], O_RDONLY);
  struct stat st;
  if (in < 0 || fstat(in, &st) != 0) return perror("open"), 2;
  long total = st.st_size, done = 0;
  double t0;
  if (strncmp(mode, "sendfile", 8) == 0) {
    if (argc < 4) return 2;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)atoi(argv[3]));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = -1;
    for (int i = 0; i < 100 && ok != 0; ++i) {  // the reader may still be starting
      ok = connect(s, (struct sockaddr*)&a, sizeof a);
      if (ok != 0) {
        close(s);
        s = socket(AF_INET, SOCK_STREAM, 0);
        usleep(50000);
      }
    }
    if (ok != 0) return perror("connect"), 2;
    off_t off = 0;
    t0 = now();
    while (done < total) {
      size_t want = (size_t)(total - done);
      long r = sys ? syscall(SYS_sendfile, s, in, &off, want) : sendfile(s, in, &off, want);
      if (r <= 0) return perror("sendfile"), 1;
      done += r;
    }
    close(s);
  } else if (strncmp(mode, "splice", 6) == 0) {
    int p[2];
    if (pipe(p) != 0) return 2;
    pid_t child = fork();
    if (child == 0) {
      close(p[1]);
      static char sink[65536];
      long got = 0;
      ssize_t r;
      while ((r = read(p[0], sink, sizeof sink)) > 0) got += r;
      _exit(got == total ? 0 : 1);
    }
    close(p[0]);
    t0 = now();
    while (done < total) {
      size_t want = (size_t)(total - done);
      long r = sys ? syscall(SYS_splice, in, NULL, p[1], NULL, want, 0) : splice(in, NULL, p[1], NULL, want, 0);
      if (r <= 0) return perror("splice"), 1;
      done += r;
    }
    close(p[1]);
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
      fprintf(stderr, "reader lost bytes\n");
      return 1;
    }
  } else {
    return 2;
  }
  printf("bytes=%ld secs=%.3f\n", done, now() - t0);
  return 0;
}
