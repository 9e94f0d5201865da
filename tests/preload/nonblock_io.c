/* SPDX-License-Identifier: MIT
   nonblock_io: a capped call on a non-blocking descriptor never waits: it moves what the
   bucket allows now or fails with EAGAIN, and poll() reports the descriptor ready again
   when its tokens are due (not before: no busy loop). A 1 MiB pipe is filled by
   non-blocking writes and drained by non-blocking reads; a socket is drained with
   MSG_DONTWAIT; a pipe is spliced into another by syscall(SYS_splice, ..., SPLICE_F_NONBLOCK)
   (the flag, not the descriptors, says it must not wait). Reports short transfers, EAGAINs
   and polls seen (splice's apart), the longest single call (a call that slept would show
   here) and the seconds taken. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload_util.h"

#define PIPE_BYTES (1 << 20)
#define REQ (256 << 10)

static char g_out[PIPE_BYTES], g_in[PIPE_BYTES];
static int g_shorts, g_eagain, g_polls;
static double g_longest;

/* One call, timed; EAGAIN waits in poll() for `ev`. @return the call's result (0 on EAGAIN). */
static ssize_t timed(ssize_t (*op)(int, void*, size_t, int), int fd, void* b, size_t n, int flags, short ev) {
  double t0 = now_s();
  ssize_t r = op(fd, b, n, flags);
  double dt = now_s() - t0;
  if (dt > g_longest) g_longest = dt;
  if (r < 0 && errno == EAGAIN) {
    ++g_eagain;
    struct pollfd p = {fd, ev, 0};
    ++g_polls;
    if (poll(&p, 1, 5000) != 1) die("poll after EAGAIN did not report the descriptor within 5 s");
    return 0;
  }
  return r;
}
static ssize_t op_write(int fd, void* b, size_t n, int f) { (void)f; return write(fd, b, n); }
static ssize_t op_read(int fd, void* b, size_t n, int f) { (void)f; return read(fd, b, n); }
static ssize_t op_recv(int fd, void* b, size_t n, int f) { return recv(fd, b, n, f); }

/* Blocks of BLOCK bytes written, then read back (small capped writes each take a pipe
   page of their own: a block always fits). */
#define BLOCK (64 << 10)
static void pipe_round_trip(void) {
  int p[2];
  if (pipe2(p, O_NONBLOCK)) die("pipe2");
  if (fcntl(p[1], F_SETPIPE_SZ, PIPE_BYTES) < PIPE_BYTES) die("F_SETPIPE_SZ");
  for (int i = 0; i < PIPE_BYTES; ++i) g_out[i] = (char)(i * 7 + i / 4096);
  for (size_t block = 0; block < PIPE_BYTES; block += BLOCK) {
    for (size_t done = block; done < block + BLOCK;) {
      size_t want = block + BLOCK - done;
      ssize_t w = timed(op_write, p[1], g_out + done, want, 0, POLLOUT);
      if (w < 0) die("non-blocking pipe write after %zu bytes", done);
      if (w > 0 && (size_t)w < want) g_shorts++;
      done += (size_t)w;
    }
    for (size_t done = block; done < block + BLOCK;) {
      size_t want = block + BLOCK - done;
      ssize_t r = timed(op_read, p[0], g_in + done, want, 0, POLLIN);
      if (r < 0 || (r == 0 && errno != EAGAIN)) die("non-blocking pipe read after %zu bytes", done);
      if (r > 0 && (size_t)r < want) g_shorts++;
      done += (size_t)r;
    }
  }
  if (memcmp(g_in, g_out, PIPE_BYTES)) die("pipe data differs");
  close(p[0]);
  close(p[1]);
}

static void socket_drain(void) {
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp)) die("socketpair");
  fcntl(sp[0], F_SETFL, O_NONBLOCK);
  size_t filled = 0; /* fill with send(MSG_DONTWAIT) (not capped) until the socket is full */
  for (;;) {
    ssize_t w = send(sp[0], g_out + filled % (PIPE_BYTES / 2), 4096, MSG_DONTWAIT);
    if (w < 0 && errno == EAGAIN) break;
    if (w <= 0) die("socket fill");
    filled += (size_t)w;
  }
  for (size_t done = 0; done < filled;) {
    ssize_t r = timed(op_recv, sp[1], g_in, REQ, MSG_DONTWAIT, POLLIN);
    if (r < 0) die("MSG_DONTWAIT recv after %zu of %zu bytes", done, filled);
    if (r > 0 && (size_t)r < REQ && done + (size_t)r < filled) g_shorts++;
    done += (size_t)r;
  }
  close(sp[0]);
  close(sp[1]);
}

/* Half the pipe bytes spliced from one blocking pipe into another through syscall(),
   SPLICE_F_NONBLOCK: refused or cut by the cap, never held. */
static int g_splice_eagain, g_splice_polls;
static void splice_raw(void) {
  int a[2], b[2];
  if (pipe(a) || pipe(b)) die("pipe");
  if (fcntl(a[1], F_SETPIPE_SZ, PIPE_BYTES) < PIPE_BYTES || fcntl(b[1], F_SETPIPE_SZ, PIPE_BYTES) < PIPE_BYTES)
    die("F_SETPIPE_SZ");
  const size_t total = PIPE_BYTES / 2;
  for (size_t done = 0; done < total;) {
    ssize_t w = write(a[1], g_out + done, total - done);
    if (w <= 0) die("pipe fill");
    done += (size_t)w;
  }
  for (size_t done = 0; done < total;) {
    double c0 = now_s();
    long r = syscall(SYS_splice, a[0], NULL, b[1], NULL, total - done, SPLICE_F_NONBLOCK);
    double dt = now_s() - c0;
    if (dt > g_longest) g_longest = dt;
    if (r < 0 && errno == EAGAIN) {  /* the capped side (here the source: read=) is ready again when the tokens are due */
      ++g_splice_eagain;
      struct pollfd p = {a[0], POLLIN, 0};
      ++g_splice_polls;
      if (poll(&p, 1, 5000) != 1) die("poll after a refused splice did not report ready within 5 s");
      continue;
    }
    if (r <= 0) die("syscall(SYS_splice, SPLICE_F_NONBLOCK) after %zu bytes", done);
    done += (size_t)r;
  }
  for (size_t done = 0; done < total;) {
    ssize_t r = read(b[0], g_in + done, total - done);
    if (r <= 0) die("pipe read after splice");
    done += (size_t)r;
  }
  if (memcmp(g_in, g_out, total)) die("spliced data differs");
  close(a[0]), close(a[1]), close(b[0]), close(b[1]);
}

int main(void) {
  double t0 = now_s();
  pipe_round_trip();
  socket_drain();
  splice_raw();
  printf("shorts=%d eagain=%d polls=%d splice_eagain=%d splice_polls=%d longest_ms=%.2f ", g_shorts, g_eagain,
         g_polls, g_splice_eagain, g_splice_polls, g_longest * 1000);
  report(2 * PIPE_BYTES, now_s() - t0);
  return 0;
}
