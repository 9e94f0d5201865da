/* SPDX-License-Identifier: MIT
   sock_xfer: sends SRC over TCP on 127.0.0.1 to a receiver thread of the same process,
   which writes what arrives to DST. MODE picks the call pair: send (send/recv), sendto
   (sendto/recvfrom), msg (sendmsg/recvmsg), mmsg (sendmmsg/recvmmsg), rw (write/read). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload_util.h"

static char g_rbuf[1 << 16];
static size_t g_chunk = sizeof g_rbuf; /* not a constant: fortified builds call __recv_chk */
static const char* g_mode;
static int g_listen = -1, g_out = -1;
static long long g_received;

static ssize_t recv_some(int s) {
  if (!strcmp(g_mode, "send")) return recv(s, g_rbuf, g_chunk, 0);
  if (!strcmp(g_mode, "sendto")) {
    struct sockaddr_in from;
    socklen_t len = sizeof from;
    return recvfrom(s, g_rbuf, g_chunk, 0, (struct sockaddr*)&from, &len);
  }
  if (!strcmp(g_mode, "rw")) return read(s, g_rbuf, g_chunk);
  if (!strcmp(g_mode, "msg")) {
    struct iovec v[2] = {{g_rbuf, g_chunk / 2}, {g_rbuf + g_chunk / 2, g_chunk - g_chunk / 2}};
    struct msghdr m = {.msg_iov = v, .msg_iovlen = 2};
    return recvmsg(s, &m, 0);
  }
  /* mmsg: four messages of a quarter buffer each; wait for the first only */
  struct iovec v[4];
  struct mmsghdr mm[4];
  memset(mm, 0, sizeof mm);
  for (int i = 0; i < 4; ++i) {
    v[i].iov_base = g_rbuf + i * (g_chunk / 4);
    v[i].iov_len = g_chunk / 4;
    mm[i].msg_hdr.msg_iov = &v[i];
    mm[i].msg_hdr.msg_iovlen = 1;
  }
  int n = recvmmsg(s, mm, 4, MSG_WAITFORONE, NULL);
  if (n <= 0) return n;
  ssize_t total = 0;
  for (int i = 0; i < n; ++i) { /* messages fill quarters in order: pack them */
    memmove(g_rbuf + total, v[i].iov_base, mm[i].msg_len);
    total += mm[i].msg_len;
  }
  return total;
}

static void* receiver(void* arg) {
  (void)arg;
  int s = accept(g_listen, NULL, NULL);
  if (s < 0) die("accept");
  ssize_t r;
  while ((r = recv_some(s)) > 0) {
    for (ssize_t done = 0; done < r;) {
      ssize_t w = write(g_out, g_rbuf + done, (size_t)(r - done));
      if (w <= 0) die("write out");
      done += w;
    }
    g_received += r;
  }
  if (r < 0) die("receive (%s)", g_mode);
  close(s);
  return NULL;
}

static ssize_t send_some(int s, const char* p, size_t n) {
  if (!strcmp(g_mode, "send")) return send(s, p, n, 0);
  if (!strcmp(g_mode, "sendto")) return sendto(s, p, n, 0, NULL, 0);
  if (!strcmp(g_mode, "rw")) return write(s, p, n);
  if (!strcmp(g_mode, "msg")) {
    struct iovec v[2] = {{(void*)p, n / 2}, {(void*)(p + n / 2), n - n / 2}};
    struct msghdr m = {.msg_iov = v, .msg_iovlen = 2};
    return sendmsg(s, &m, 0);
  }
  struct iovec v[4];
  struct mmsghdr mm[4];
  memset(mm, 0, sizeof mm);
  size_t q = (n + 3) / 4;
  int k = 0;
  for (size_t off = 0; off < n && k < 4; off += q, ++k) {
    v[k].iov_base = (void*)(p + off);
    v[k].iov_len = n - off < q ? n - off : q;
    mm[k].msg_hdr.msg_iov = &v[k];
    mm[k].msg_hdr.msg_iovlen = 1;
  }
  int sent = sendmmsg(s, mm, (unsigned)k, 0);
  if (sent <= 0) return sent;
  ssize_t total = 0;
  for (int i = 0; i < sent; ++i) {
    total += mm[i].msg_len;
    if (mm[i].msg_len < v[i].iov_len) break; /* a short message ends the contiguous part */
  }
  return total;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s send|sendto|msg|mmsg|rw SRC DST [CHUNK]\n", argv[0]);
    return 2;
  }
  g_mode = argv[1];
  if (argc > 4) g_chunk = (size_t)size_arg(argv[4]);
  if (g_chunk < 4 || g_chunk > sizeof g_rbuf) g_chunk = sizeof g_rbuf;
  int in = open(argv[2], O_RDONLY);
  g_out = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in < 0 || g_out < 0) die("open");
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  g_listen = socket(AF_INET, SOCK_STREAM, 0);
  if (g_listen < 0 || bind(g_listen, (struct sockaddr*)&a, sizeof a) || listen(g_listen, 1) ||
      getsockname(g_listen, (struct sockaddr*)&a, &alen))
    die("listen");
  pthread_t th;
  if (pthread_create(&th, NULL, receiver, NULL)) die("pthread_create");
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0 || connect(s, (struct sockaddr*)&a, sizeof a)) die("connect");
  static char sbuf[1 << 16];
  double t0 = now_s();
  ssize_t r;
  long long sent = 0;
  while ((r = read(in, sbuf, sizeof sbuf)) > 0) {
    for (ssize_t done = 0; done < r;) {
      ssize_t w = send_some(s, sbuf + done, (size_t)(r - done));
      if (w <= 0) die("send (%s)", g_mode);
      done += w;
    }
    sent += r;
  }
  if (r < 0) die("read");
  shutdown(s, SHUT_WR);
  pthread_join(th, NULL);
  double secs = now_s() - t0;
  if (g_received != sent) die("sent %lld, received %lld", sent, g_received);
  close(s);
  if (close(g_out)) die("close");
  report(g_received, secs);
  return 0;
}
