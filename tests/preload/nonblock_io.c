/* SPDX-License-Identifier: MIT
   nonblock_io: a capped call on a non-blocking fd must never fail with a fake EAGAIN
   while the kernel could move data (shortened transfers are fine). A 1 MiB pipe is
   filled by non-blocking writes and drained by non-blocking reads; a socket is drained
   with MSG_DONTWAIT. Reports short transfers seen and the seconds taken. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "preload_util.h"

#define PIPE_BYTES (1 << 20)
#define REQ (256 << 10)

static char g_out[PIPE_BYTES], g_in[PIPE_BYTES];
static int g_shorts;

static void pipe_round_trip(void) {
  int p[2];
  if (pipe2(p, O_NONBLOCK)) die("pipe2");
  if (fcntl(p[1], F_SETPIPE_SZ, PIPE_BYTES) < PIPE_BYTES) die("F_SETPIPE_SZ");
  for (int i = 0; i < PIPE_BYTES; ++i) g_out[i] = (char)(i * 7 + i / 4096);
  for (size_t done = 0; done < PIPE_BYTES;) { /* never full: capacity == total */
    size_t want = PIPE_BYTES - done < REQ ? PIPE_BYTES - done : REQ;
    ssize_t w = write(p[1], g_out + done, want);
    if (w < 0) die("non-blocking pipe write after %zu bytes", done);
    if ((size_t)w < want) g_shorts++;
    done += (size_t)w;
  }
  for (size_t done = 0; done < PIPE_BYTES;) { /* never empty until the end */
    size_t want = PIPE_BYTES - done < REQ ? PIPE_BYTES - done : REQ;
    ssize_t r = read(p[0], g_in + done, want);
    if (r <= 0) die("non-blocking pipe read after %zu bytes", done);
    if ((size_t)r < want) g_shorts++;
    done += (size_t)r;
  }
  if (memcmp(g_in, g_out, PIPE_BYTES)) die("pipe data differs");
  close(p[0]);
  close(p[1]);
}

static void socket_drain(void) {
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp)) die("socketpair");
  fcntl(sp[0], F_SETFL, O_NONBLOCK);
  size_t filled = 0; /* fill with uncapped write() until the socket is full */
  for (;;) {
    ssize_t w = write(sp[0], g_out + filled % (PIPE_BYTES / 2), 4096);
    if (w < 0 && errno == EAGAIN) break;
    if (w <= 0) die("socket fill");
    filled += (size_t)w;
  }
  for (size_t done = 0; done < filled;) {
    ssize_t r = recv(sp[1], g_in, REQ, MSG_DONTWAIT);
    if (r <= 0) die("MSG_DONTWAIT recv after %zu of %zu bytes", done, filled);
    if ((size_t)r < REQ && done + (size_t)r < filled) g_shorts++;
    done += (size_t)r;
  }
  close(sp[0]);
  close(sp[1]);
}

int main(void) {
  double t0 = now_s();
  pipe_round_trip();
  socket_drain();
  printf("shorts=%d ", g_shorts);
  report(2 * PIPE_BYTES, now_s() - t0);
  return 0;
}
