/* SPDX-License-Identifier: MIT
   POSIX AIO under libbonsai (issue 18 item 2): glibc's aio_read/aio_write/lio_listio
   with several requests in flight, short reads at end of file, and aio_cancel.
   usage: aio_rw MODE ARGS...
     read FILE QD BS             read FILE with aio_read, QD requests in flight
     write FILE MIB QD BS        write MIB MiB with aio_write, QD in flight
     lio_read FILE QD BS         read FILE with lio_listio(LIO_NOWAIT) batches of QD
     lio_write FILE MIB QD BS    write with lio_listio(LIO_WAIT) batches; results are
                                 never collected (aio_error/aio_return not called)
     eof FILE N QD BS            N reads of BS at offset 0 of a small FILE (each moves
                                 the file's size), QD in flight, collected by aio_return
     eof_wait FILE N QD BS       the same with lio_listio(LIO_WAIT) batches, never collected
     cancel FILE K BS            K reads of BS queued behind a read blocked on a pipe are
                                 cancelled (aio_cancel); then K*BS bytes of FILE are read
                                 with aio_read: "secs" times that read only
   Collection: aio_suspend on the oldest request, aio_error, aio_return.
   Prints "bytes=N secs=S" (bytes: what moved). The body of aio_rw.c and aio_rw64.c
   (_FILE_OFFSET_BITS=64: the aio_*64 symbols). */
#pragma once
#define _GNU_SOURCE
#include <aio.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload_util.h"

#define MAXQ 64

static struct aiocb cbs[MAXQ];
static char* bufs[MAXQ];

static void setup(int qd, long long bs) {
  if (qd < 1 || qd > MAXQ) die("queue depth %d out of 1..%d", qd, MAXQ);
  for (int i = 0; i < qd; ++i) {
    bufs[i] = malloc((size_t)bs);
    if (!bufs[i]) die("malloc");
    memset(bufs[i], 'a' + i % 26, (size_t)bs);
  }
}

static void prep(struct aiocb* cb, int fd, char* buf, long long bs, long long off, int op) {
  memset(cb, 0, sizeof *cb);
  cb->aio_fildes = fd;
  cb->aio_buf = buf;
  cb->aio_nbytes = (size_t)bs;
  cb->aio_offset = (off_t)off;
  cb->aio_lio_opcode = op;
  cb->aio_sigevent.sigev_notify = SIGEV_NONE;
}

/* Waits for `cb` and collects its result. */
static ssize_t collect(struct aiocb* cb) {
  const struct aiocb* one[1] = {cb};
  int e;
  while ((e = aio_error(cb)) == EINPROGRESS) aio_suspend(one, 1, NULL);
  ssize_t r = aio_return(cb);
  if (e != 0 || r < 0) {
    errno = e;
    die("aio request failed");
  }
  return r;
}

/* Reads [0, total) (or `n` times [0, bs) when total < 0) keeping qd requests in flight. */
static long long ring(int fd, int qd, long long bs, long long total, long long n, int write) {
  long long next = 0, moved = 0, issued = 0;
  int head = 0, inflight = 0;
  for (;;) {
    while (inflight < qd && (total >= 0 ? next < total : issued < n)) {
      int i = (head + inflight) % qd;
      long long len = total >= 0 && total - next < bs ? total - next : bs;
      prep(&cbs[i], fd, bufs[i], len, total >= 0 ? next : 0, 0);
      if ((write ? aio_write(&cbs[i]) : aio_read(&cbs[i])) != 0) die("aio submit");
      next += len;
      ++issued;
      ++inflight;
    }
    if (!inflight) break;
    moved += collect(&cbs[head]);
    head = (head + 1) % qd;
    --inflight;
  }
  return moved;
}

/* Batches of qd through lio_listio; LIO_WAIT batches are never collected. */
static long long lio(int fd, int qd, long long bs, long long total, long long n, int op, int mode) {
  struct aiocb* list[MAXQ];
  long long next = 0, moved = 0, issued = 0;
  while (total >= 0 ? next < total : issued < n) {
    int k = 0;
    for (; k < qd && (total >= 0 ? next < total : issued < n); ++k, ++issued) {
      long long len = total >= 0 && total - next < bs ? total - next : bs;
      prep(&cbs[k], fd, bufs[k], len, total >= 0 ? next : 0, op);
      list[k] = &cbs[k];
      next += len;
    }
    if (lio_listio(mode, list, k, NULL) != 0) die("lio_listio");
    for (int i = 0; i < k; ++i) {
      if (mode == LIO_NOWAIT) moved += collect(&cbs[i]);
      else moved += total >= 0 ? (long long)cbs[i].aio_nbytes : -1; /* not collected */
    }
  }
  return moved;
}

static long long file_size(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) die("fstat");
  return st.st_size;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: see the comment at the top of aio_rw.c\n");
    return 2;
  }
  const char* mode = argv[1];
  const char* path = argv[2];
  int wr = !strcmp(mode, "write") || !strcmp(mode, "lio_write");
  int fd = open(path, wr ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY, 0600);
  if (fd < 0) die("open %s", path);
  long long moved = 0;
  double t0 = now_s();
  if (!strcmp(mode, "read") || !strcmp(mode, "lio_read")) {
    int qd = atoi(argv[3]);
    long long bs = size_arg(argv[4]);
    setup(qd, bs);
    long long total = file_size(fd);
    moved = mode[0] == 'r' ? ring(fd, qd, bs, total, 0, 0) : lio(fd, qd, bs, total, 0, LIO_READ, LIO_NOWAIT);
    if (moved != total) die("read %lld of %lld bytes", moved, total);
  } else if (wr) {
    if (argc < 6) return 2;
    long long total = size_arg(argv[3]) << 20;
    int qd = atoi(argv[4]);
    long long bs = size_arg(argv[5]);
    setup(qd, bs);
    moved = mode[0] == 'w' ? ring(fd, qd, bs, total, 0, 1) : lio(fd, qd, bs, total, 0, LIO_WRITE, LIO_WAIT);
    if (moved != total) die("wrote %lld of %lld bytes", moved, total);
  } else if (!strcmp(mode, "eof") || !strcmp(mode, "eof_wait")) {
    if (argc < 6) return 2;
    long long n = atoll(argv[3]);
    int qd = atoi(argv[4]);
    long long bs = size_arg(argv[5]);
    setup(qd, bs);
    long long size = file_size(fd);
    if (size >= bs) die("eof: the file must be smaller than a request");
    if (!strcmp(mode, "eof")) {
      moved = ring(fd, qd, bs, -1, n, 0);
      if (moved != n * size) die("eof: moved %lld, expected %lld", moved, n * size);
    } else {
      lio(fd, qd, bs, -1, n, LIO_READ, LIO_WAIT);
      moved = n * size;
    }
  } else if (!strcmp(mode, "cancel")) {
    int k = atoi(argv[3]);
    long long bs = size_arg(argv[4]);
    if (k + 1 > MAXQ) die("cancel: at most %d", MAXQ - 1);
    setup(k + 1, bs);
    int p[2];
    if (pipe(p) != 0) die("pipe");
    /* The first read blocks on the empty pipe in a helper thread; glibc runs one
       request per descriptor at a time, so the next k wait in its queue. */
    for (int i = 0; i <= k; ++i) {
      prep(&cbs[i], p[0], bufs[i], bs, 0, 0);
      if (aio_read(&cbs[i]) != 0) die("aio_read pipe");
    }
    usleep(50000);
    int c = aio_cancel(p[0], NULL);
    if (c != AIO_NOTCANCELED && c != AIO_CANCELED) die("aio_cancel returned %d", c);
    int cancelled = 0;
    for (int i = 1; i <= k; ++i) {
      /* half settled through aio_error (ECANCELED), half through aio_return (-1) */
      if (i % 2) {
        int e = aio_error(&cbs[i]);
        if (e == ECANCELED) ++cancelled;
        (void)aio_return(&cbs[i]);
      } else {
        ssize_t r = aio_return(&cbs[i]);
        if (r == -1 && aio_error(&cbs[i]) == ECANCELED) ++cancelled;
      }
    }
    if (cancelled != k) die("cancel: %d of %d requests cancelled", cancelled, k);
    if (write(p[1], "x", 1) != 1) die("write pipe");
    if (collect(&cbs[0]) != 1) die("pipe read");
    t0 = now_s();
    long long want = (long long)k * bs;
    moved = ring(fd, 1, bs, want < file_size(fd) ? want : file_size(fd), 0, 0);
    printf("cancelled=%d ", cancelled);
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  double secs = now_s() - t0;
  if (wr && fsync(fd) != 0) die("fsync");
  close(fd);
  report(moved, secs);
  return 0;
}
