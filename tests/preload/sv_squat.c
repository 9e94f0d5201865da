/* SPDX-License-Identifier: MIT
   sv_squat: someone else taking a service's join rendezvous first (libbonsai/abi/
   sv_join.h), for t_sv_join_squat. Static, so that it runs in an empty container too.
     sv_squat abstract NAME MAGIC SECS       listens on the abstract unix name NAME (0.2.0's
                                             rendezvous: "bonsai-sv.<prefix><uid>.<service>")
     sv_squat path DIR NAME MAGIC SECS       makes DIR (mode 0777; kept if it exists) and
                                             listens on DIR/NAME
     sv_squat stale DIR NAME                 leaves a socket at DIR/NAME that no one listens on
     sv_squat probe PATH                     a joiner of its own: connects to the socket PATH
                                             (again for up to 10 s while no one listens) and
                                             prints "magic=HEX" of the filter it is sent,
                                             "refused" (closed without one) or "error ERRNO"
   A squatter answers every connection as a supervisor would, with a filter that lets
   every call go unnotified (header MAGIC, hex, and one instruction: return ALLOW), and
   takes the listener a joiner hands back: a joiner that trusts it runs unlimited and its
   listener is the squatter's. Prints "ready" once listening, then "conn" per connection
   and "listener" per descriptor received, each line flushed; ends after SECS seconds. */
// build-flags: -static
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "preload_util.h"

static int bound(const char* name, int abstract) {
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  size_t n = strlen(name);
  if (n + 2 > sizeof a.sun_path) die("name too long: %s", name);
  memcpy(a.sun_path + (abstract ? 1 : 0), name, n);
  socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);  // a leading NUL (abstract) or a trailing one
  int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (s < 0) die("socket");
  if (bind(s, (struct sockaddr*)&a, len) != 0) die("bind %s", name);
  return s;
}

static void say(const char* line) {
  printf("%s\n", line);
  fflush(stdout);
}

static void serve(int s, uint32_t magic, int secs) {
  if (listen(s, 16) != 0) die("listen");
  say("ready");
  double end = now_s() + secs;
  while (now_s() < end) {
    struct pollfd p = {s, POLLIN, 0};
    if (poll(&p, 1, 100) != 1) continue;
    int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) continue;
    say("conn");
    struct {
      uint32_t magic, insns;
      struct sock_filter f[1];
    } msg = {magic, 1, {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)}};
    if (send(c, &msg, sizeof msg, MSG_NOSIGNAL) == (ssize_t)sizeof msg) {
      struct pollfd q = {c, POLLIN, 0};
      if (poll(&q, 1, 2000) == 1) {
        char byte;
        struct iovec v = {&byte, 1};
        char ctl[CMSG_SPACE(4 * sizeof(int))];
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_iov = &v;
        m.msg_iovlen = 1;
        m.msg_control = ctl;
        m.msg_controllen = sizeof ctl;
        if (recvmsg(c, &m, MSG_CMSG_CLOEXEC) > 0)
          for (struct cmsghdr* h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
            if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
              size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
              for (size_t i = 0; i < k; ++i) {
                int fd;
                memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof fd);
                say("listener");
                close(fd);
              }
            }
      }
    }
    close(c);
  }
}

int main(int argc, char** argv) {
  if (argc >= 5 && strcmp(argv[1], "abstract") == 0) {
    serve(bound(argv[2], 1), (uint32_t)strtoul(argv[3], NULL, 16), atoi(argv[4]));
    return 0;
  }
  if (argc >= 6 && strcmp(argv[1], "path") == 0) {
    if (mkdir(argv[2], 0777) != 0 && errno != EEXIST) die("mkdir %s", argv[2]);
    chmod(argv[2], 0777);
    char path[256];
    snprintf(path, sizeof path, "%s/%s", argv[2], argv[3]);
    serve(bound(path, 0), (uint32_t)strtoul(argv[4], NULL, 16), atoi(argv[5]));
    return 0;
  }
  if (argc >= 4 && strcmp(argv[1], "stale") == 0) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", argv[2], argv[3]);
    close(bound(path, 0));
    say("ready");
    return 0;
  }
  if (argc >= 3 && strcmp(argv[1], "probe") == 0) {
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    if (strlen(argv[2]) >= sizeof a.sun_path) die("path too long: %s", argv[2]);
    strcpy(a.sun_path, argv[2]);
    double end = now_s() + 10;
    for (;;) {
      int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
      if (s < 0) die("socket");
      if (connect(s, (struct sockaddr*)&a, sizeof a) == 0) {
        uint32_t msg[2048];
        struct pollfd p = {s, POLLIN, 0};
        ssize_t n = poll(&p, 1, 3000) == 1 ? recv(s, msg, sizeof msg, 0) : -1;
        if (n >= 8) printf("magic=%08x\n", msg[0]);
        else if (n == 0) printf("refused\n");
        else printf("error %d\n", n < 0 ? errno : 0);
        return 0;
      }
      int e = errno;
      close(s);
      if (now_s() > end) {
        printf("error %d\n", e);
        return 0;
      }
      usleep(50000);
    }
  }
  fprintf(stderr, "usage: sv_squat abstract NAME MAGIC SECS | path DIR NAME MAGIC SECS | stale DIR NAME | probe PATH\n");
  return 2;
}
