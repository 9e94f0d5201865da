/* SPDX-License-Identifier: MIT
   file_xfer: copies SRC to DST with one family of calls (read/write, pread, readv,
   preadv, preadv2, sendfile, copy_file_range, splice, vmsplice, tee, syscall, stdio,
   lines, getline). Built plain, LFS and fortified (file_xfer*.c) so each symbol is hit. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "preload_util.h"

static char g_buf[1 << 16];
static size_t g_chunk = sizeof g_buf; /* not a constant: fortified builds call the _chk forms */
static long long g_moved;

static void write_all(int fd, const char* p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) die("write");
    p += w, n -= (size_t)w;
  }
}

static void copy_rw(int in, int out) {
  ssize_t r;
  while ((r = read(in, g_buf, g_chunk)) > 0) {
    write_all(out, g_buf, (size_t)r);
    g_moved += r;
  }
  if (r < 0) die("read");
}

static void copy_pread(int in, int out) {
  off_t off = 0;
  ssize_t r;
  while ((r = pread(in, g_buf, g_chunk, off)) > 0) {
    for (ssize_t done = 0; done < r;) {
      ssize_t w = pwrite(out, g_buf + done, (size_t)(r - done), off + done);
      if (w <= 0) die("pwrite");
      done += w;
    }
    off += r;
  }
  if (r < 0) die("pread");
  g_moved = off;
}

/* Two iovecs per call; writes of the same vector, restarted after short writes. */
static void copy_vec(int in, int out, int kind) {
  off_t off = 0;
  for (;;) {
    struct iovec v[2] = {{g_buf, g_chunk / 2}, {g_buf + g_chunk / 2, g_chunk - g_chunk / 2}};
    ssize_t r = kind == 0 ? readv(in, v, 2) : kind == 1 ? preadv(in, v, 2, off) : preadv2(in, v, 2, off, 0);
    if (r < 0) die("readv kind %d", kind);
    if (r == 0) break;
    for (ssize_t done = 0; done < r;) {
      struct iovec w1 = {g_buf + done, (size_t)(r - done)};
      ssize_t w = kind == 0 ? writev(out, &w1, 1) : kind == 1 ? pwritev(out, &w1, 1, off + done)
                                                             : pwritev2(out, &w1, 1, off + done, 0);
      if (w <= 0) die("writev kind %d", kind);
      done += w;
    }
    off += r;
  }
  g_moved = off;
}

static void copy_zero(int in, int out, int kind) {
  ssize_t r;
  for (;;) {
    r = kind == 0 ? sendfile(out, in, NULL, 1 << 20) : copy_file_range(in, NULL, out, NULL, 1 << 20, 0);
    if (r < 0) die("zero-copy kind %d", kind);
    if (r == 0) break;
    g_moved += r;
  }
}

/* splice: file -> pipe -> file, both through splice(). */
static void copy_splice(int in, int out) {
  int p[2];
  if (pipe(p)) die("pipe");
  ssize_t r;
  while ((r = splice(in, NULL, p[1], NULL, g_chunk, 0)) > 0) {
    for (ssize_t done = 0; done < r;) {
      ssize_t s = splice(p[0], NULL, out, NULL, (size_t)(r - done), 0);
      if (s <= 0) die("splice out");
      done += s;
    }
    g_moved += r;
  }
  if (r < 0) die("splice in");
}

/* vmsplice: read() into memory, vmsplice into a pipe, splice the pipe to the file.
   tee: the same, but the pipe is tee'd to a second pipe, whose copy is what lands
   in DST (the first pipe's data is spliced to /dev/null). */
static void copy_vmsplice(int in, int out, int with_tee) {
  int p[2], q[2];
  int null = open("/dev/null", O_WRONLY);
  if (pipe(p) || pipe(q) || null < 0) die("pipe");
  ssize_t r;
  while ((r = read(in, g_buf, g_chunk)) > 0) {
    for (ssize_t put = 0; put < r;) {
      struct iovec v = {g_buf + put, (size_t)(r - put)};
      ssize_t n = vmsplice(p[1], &v, 1, 0);
      if (n <= 0) die("vmsplice");
      put += n;
      int src = p[0];
      if (with_tee) {
        for (ssize_t t = 0; t < n;) {
          ssize_t k = tee(p[0], q[1], (size_t)(n - t), 0);
          if (k <= 0) die("tee");
          t += k;
          /* tee does not consume: drop what was duplicated from the first pipe */
          for (ssize_t d = 0; d < k;) {
            ssize_t s = splice(p[0], NULL, null, NULL, (size_t)(k - d), 0);
            if (s <= 0) die("splice null");
            d += s;
          }
        }
        src = q[0];
      }
      for (ssize_t done = 0; done < n;) {
        ssize_t s = splice(src, NULL, out, NULL, (size_t)(n - done), 0);
        if (s <= 0) die("splice out");
        done += s;
      }
    }
    g_moved += r;
  }
  if (r < 0) die("read");
}

static void copy_syscall(int in, int out) {
  long r;
  while ((r = syscall(SYS_read, in, g_buf, g_chunk)) > 0) {
    for (long done = 0; done < r;) {
      long w = syscall(SYS_write, out, g_buf + done, r - done);
      if (w <= 0) die("syscall write");
      done += w;
    }
    g_moved += r;
  }
  if (r < 0) die("syscall read");
}

static void copy_stdio(const char* src, const char* dst, int kind) {
  FILE* in = fopen(src, "r");
  FILE* out = fopen(dst, "w");
  if (!in || !out) die("fopen");
  if (kind == 0) {
    size_t r;
    while ((r = fread(g_buf, 1, g_chunk, in)) > 0) {
      if (fwrite(g_buf, 1, r, out) != r) die("fwrite");
      g_moved += (long long)r;
    }
  } else if (kind == 1) {
    while (fgets(g_buf, (int)g_chunk, in)) {
      if (fputs(g_buf, out) == EOF) die("fputs");
      g_moved += (long long)strlen(g_buf);
    }
  } else {
    char* line = NULL;
    size_t cap = 0;
    ssize_t r;
    while ((r = getline(&line, &cap, in)) > 0) {
      if (fputs(line, out) == EOF) die("fputs");
      g_moved += r;
    }
    free(line);
  }
  if (ferror(in) || fclose(out) || fclose(in)) die("stdio");
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s MODE SRC DST [CHUNK]\n", argv[0]);
    return 2;
  }
  const char* m = argv[1];
  if (argc > 4) g_chunk = (size_t)size_arg(argv[4]);
  if (g_chunk == 0 || g_chunk > sizeof g_buf) g_chunk = sizeof g_buf;
  double t0 = now_s();
  if (!strcmp(m, "stdio") || !strcmp(m, "lines") || !strcmp(m, "getline")) {
    copy_stdio(argv[2], argv[3], !strcmp(m, "stdio") ? 0 : !strcmp(m, "lines") ? 1 : 2);
  } else {
    int in = open(argv[2], O_RDONLY);
    int out = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0) die("open %s / %s", argv[2], argv[3]);
    if (!strcmp(m, "rw")) copy_rw(in, out);
    else if (!strcmp(m, "pread")) copy_pread(in, out);
    else if (!strcmp(m, "readv")) copy_vec(in, out, 0);
    else if (!strcmp(m, "preadv")) copy_vec(in, out, 1);
    else if (!strcmp(m, "preadv2")) copy_vec(in, out, 2);
    else if (!strcmp(m, "sendfile")) copy_zero(in, out, 0);
    else if (!strcmp(m, "cfr")) copy_zero(in, out, 1);
    else if (!strcmp(m, "splice")) copy_splice(in, out);
    else if (!strcmp(m, "vmsplice")) copy_vmsplice(in, out, 0);
    else if (!strcmp(m, "tee")) copy_vmsplice(in, out, 1);
    else if (!strcmp(m, "syscall")) copy_syscall(in, out);
    else {
      fprintf(stderr, "unknown mode %s\n", m);
      return 2;
    }
    if (close(out) || close(in)) die("close");
  }
  report(g_moved, now_s() - t0);
  return 0;
}
