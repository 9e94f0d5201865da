/* SPDX-License-Identifier: MIT
   A non-blocking sender's endings (issue 12 item 2). Run under libbonsai with
   BONSAI_COMPRESS_TO; the peer (bench/compress_peer --recv) checks the bytes.
     comp_nonblock PORT FILE MODE
   Connects with SOCK_NONBLOCK (a small SO_SNDBUF, so the socket fills and the
   library's send buffer holds bytes), writes FILE in 128 KiB writes (its random
   tail's last frame, raw, is larger than the room a slowed receiver leaves, so it is
   still buffered at the ending), waiting with poll for POLLOUT after EAGAIN, then
   ends by MODE:
     shutdown  shutdown(SHUT_WR), then close
     close     close at once (the buffered bytes go out at close)
     pollin    waits only for POLLIN (the peer closes after the last byte: EOF)
     epollin   the same with epoll (EPOLLIN only, edge-triggered)
     selectin  the same with select (readable only); its waits after EAGAIN use
               select's write set too
     fork      at the first EAGAIN forks: the child writes once (must fail, EPIPE),
               closes and exits; the parent goes on (no byte sent twice)
     dontwait  a blocking socket written with send(MSG_DONTWAIT)
     exit      exit(0) without closing (the kernel would still send what it holds)
   Prints "sent=N eagain=K" and exits 0, or 1 on an unexpected error. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char* what) {
  perror(what);
  exit(1);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: comp_nonblock PORT FILE MODE\n");
    return 2;
  }
  const char* mode = argv[3];
  int dontwait = !strcmp(mode, "dontwait");
  signal(SIGPIPE, SIG_IGN);
  int in = open(argv[2], O_RDONLY);
  struct stat st;
  if (in < 0 || fstat(in, &st)) die("input");
  char* data = malloc((size_t)st.st_size + 1);
  if (!data || read(in, data, (size_t)st.st_size) != st.st_size) die("read input");
  close(in);
  int fd = socket(AF_INET, SOCK_STREAM | (dontwait ? 0 : SOCK_NONBLOCK), 0);
  int small = 32768;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr*)&sa, sizeof sa)) {
    if (errno != EINPROGRESS) die("connect");
    struct pollfd p = {fd, POLLOUT, 0};
    int err = 0;
    socklen_t el = sizeof err;
    if (poll(&p, 1, 10000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) die("connect");
  }
  long long sent = 0, eagain = 0;
  int forked = 0;
  for (size_t pos = 0; pos < (size_t)st.st_size;) {
    size_t n = (size_t)st.st_size - pos < 131072 ? (size_t)st.st_size - pos : 131072;
    ssize_t r = dontwait ? send(fd, data + pos, n, MSG_DONTWAIT) : write(fd, data + pos, n);
    if (r < 0 && errno == EAGAIN) {
      ++eagain;
      if (!strcmp(mode, "fork") && !forked) {
        forked = 1;
        pid_t c = fork();
        if (c < 0) die("fork");
        if (c == 0) {  // the parent's buffered bytes are not the child's to send
          ssize_t w = write(fd, "x", 1);
          if (w != -1 || errno != EPIPE) {
            fprintf(stderr, "child: write gave %zd (errno %d), want -1/EPIPE\n", w, errno);
            _exit(3);
          }
          close(fd);
          exit(0);
        }
        int status;
        if (waitpid(c, &status, 0) != c || !WIFEXITED(status) || WEXITSTATUS(status)) die("child");
      }
      if (!strcmp(mode, "selectin")) {
        fd_set w;
        FD_ZERO(&w);
        FD_SET(fd, &w);
        struct timeval tv = {10, 0};
        if (select(fd + 1, NULL, &w, NULL, &tv) != 1 || !FD_ISSET(fd, &w)) die("select writable");
        continue;
      }
      struct pollfd p = {fd, POLLOUT, 0};
      if (poll(&p, 1, 10000) != 1) die("poll POLLOUT");
      continue;
    }
    if (r <= 0) die("write");
    pos += (size_t)r;
    sent += r;
  }
  if (!strcmp(mode, "pollin")) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 20000) != 1) die("poll POLLIN (the peer never got the last bytes)");
  } else if (!strcmp(mode, "epollin")) {
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u64 = 9};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) die("epoll_ctl");
    if (epoll_wait(ep, &ev, 1, 20000) != 1) die("epoll_wait EPOLLIN (the peer never got the last bytes)");
    close(ep);
  } else if (!strcmp(mode, "selectin")) {
    fd_set r;
    FD_ZERO(&r);
    FD_SET(fd, &r);
    struct timeval tv = {20, 0};
    if (select(fd + 1, &r, NULL, NULL, &tv) != 1) die("select readable (the peer never got the last bytes)");
  } else if (!strcmp(mode, "exit")) {
    printf("sent=%lld eagain=%lld\n", sent, eagain);
    fflush(stdout);
    exit(0);
  } else if (strcmp(mode, "close") != 0) {
    if (shutdown(fd, SHUT_WR)) die("shutdown");
  }
  close(fd);
  printf("sent=%lld eagain=%lld\n", sent, eagain);
  free(data);
  return 0;
}
