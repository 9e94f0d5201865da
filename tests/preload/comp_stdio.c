/* SPDX-License-Identifier: MIT
   stdio on compressed sockets (issue 12). Run under libbonsai with
   BONSAI_COMPRESS_TO=127.0.0.1:* and BONSAI_COMPRESS_ACCEPT=1: glibc's stdio reaches
   the kernel through calls the library cannot see, so a FILE from fdopen() on a
   socket must still write frames (after a write() has started the stream) and read
   decoded bytes. For each case a child sends ~1 MiB of text over a fresh connection
   one way (write, fwrite, fprintf, putc, fputs, optionally after a write() greeting)
   and the parent reads it another (read, fread, fgets, getc, getline) and compares.
   Also: fileno() of such a FILE is its descriptor, fclose() closes it. Prints
   "ok CASE" per case; exits 1 at the first failure. */
#define _GNU_SOURCE
#include <fcntl.h>

#include "comp_conn.h"

static void send_text(int fd, const char* how, int greet) {
  static const char hello[] = "HELLO\n";
  if (greet && write(fd, hello, sizeof hello - 1) != (ssize_t)(sizeof hello - 1)) die("write greeting");
  if (!strcmp(how, "write")) {
    for (size_t off = 0; off < g_len;) {
      ssize_t r = write(fd, g_text + off, g_len - off < 5000 ? g_len - off : 5000);
      if (r <= 0) die("write");
      off += (size_t)r;
    }
    close(fd);
    return;
  }
  FILE* f = fdopen(fd, "w");
  if (!f) die("fdopen w");
  if (fileno(f) != fd) die("fileno %d, descriptor %d", fileno(f), fd);
  if (!strcmp(how, "fwrite")) {
    for (size_t off = 0; off < g_len; off += 3000)
      if (fwrite(g_text + off, 1, g_len - off < 3000 ? g_len - off : 3000, f) == 0) die("fwrite");
  } else if (!strcmp(how, "fprintf")) {
    if (fprintf(f, "%.*s", (int)g_len, g_text) != (int)g_len) die("fprintf");
  } else if (!strcmp(how, "putc")) {
    for (size_t i = 0; i < g_len; ++i)
      if (putc(g_text[i], f) == EOF) die("putc");
  } else if (!strcmp(how, "fputs")) {
    char line[256];
    for (size_t off = 0; off < g_len;) {
      size_t n = strcspn(g_text + off, "\n") + 1;
      if (n > g_len - off) n = g_len - off;
      memcpy(line, g_text + off, n);
      line[n] = 0;
      if (fputs(line, f) == EOF) die("fputs");
      off += n;
    }
  } else {
    die("unknown send mode %s", how);
  }
  if (fclose(f) != 0) die("fclose w");
  if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) die("fclose left the descriptor open");
}

/* Reads everything from fd by `how` into a buffer; returns its length. */
static size_t recv_text(int fd, const char* how, char* out, size_t cap) {
  size_t got = 0;
  if (!strcmp(how, "read")) {
    for (ssize_t r; (r = read(fd, out + got, cap - got)) > 0;) got += (size_t)r;
    close(fd);
    return got;
  }
  FILE* f = fdopen(fd, "r");
  if (!f) die("fdopen r");
  if (fileno(f) != fd) die("fileno %d, descriptor %d", fileno(f), fd);
  if (!strcmp(how, "fread")) {
    for (size_t r; (r = fread(out + got, 1, 7000 < cap - got ? 7000 : cap - got, f)) > 0;) got += r;
  } else if (!strcmp(how, "fgets")) {
    while (got + 1 < cap && fgets(out + got, (int)(cap - got), f)) got += strlen(out + got);
  } else if (!strcmp(how, "getc")) {
    for (int c; got < cap && (c = getc(f)) != EOF;) out[got++] = (char)c;
  } else if (!strcmp(how, "getline")) {
    char* line = NULL;
    size_t n = 0;
    for (ssize_t r; (r = getline(&line, &n, f)) > 0 && got + (size_t)r <= cap; got += (size_t)r) memcpy(out + got, line, (size_t)r);
    free(line);
  } else {
    die("unknown recv mode %s", how);
  }
  if (ferror(f)) die("%s: stream error", how);
  fclose(f);
  return got;
}

static void run_case(const char* send_how, int greet, const char* recv_how) {
  char name[64];
  snprintf(name, sizeof name, "%s%s->%s", greet ? "write+" : "", send_how, recv_how);
  int tx, rx;
  pid_t pid = comp_connect_fork(&tx, &rx);
  if (pid == 0) {
    send_text(tx, send_how, greet);
    _exit(0);
  }
  size_t cap = g_len + 4096;
  char* out = malloc(cap);
  if (!out) die("malloc");
  size_t got = recv_text(rx, recv_how, out, cap);
  comp_check(pid, name, out, got, "HELLO\n", greet ? 6 : 0);
  free(out);
}

int main(void) {
  comp_setup();
  run_case("fwrite", 1, "read");
  run_case("fprintf", 1, "fread");
  run_case("putc", 1, "fgets");
  run_case("fputs", 0, "getc");
  run_case("write", 0, "getline");
  run_case("fwrite", 0, "fread");
  return 0;
}
