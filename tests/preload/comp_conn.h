/* SPDX-License-Identifier: MIT
   What the compression-path programs (comp_stdio, comp_calls, comp_dup) share: a
   loopback listener, ~1 MiB of text lines, a fresh connection per case whose sending
   half goes to a forked child, and the check of what the parent received. */
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload_util.h"

static int g_listen;
static struct sockaddr_in g_addr;
static char* g_text;
static size_t g_len;

/* The text every case sends, and the listener its connections come to. */
static void comp_setup(void) {
  size_t cap = 1 << 20;
  g_text = malloc(cap + 256);
  if (!g_text) die("malloc");
  g_len = 0;
  for (int i = 0; g_len < cap; ++i)
    g_len += (size_t)sprintf(g_text + g_len, "event %d: user=%d action=view page=/item/%d\n", i, i % 311, i % 97);
  g_listen = socket(AF_INET, SOCK_STREAM, 0);
  memset(&g_addr, 0, sizeof g_addr);
  g_addr.sin_family = AF_INET;
  g_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t l = sizeof g_addr;
  if (g_listen < 0 || bind(g_listen, (struct sockaddr*)&g_addr, sizeof g_addr) || listen(g_listen, 4) ||
      getsockname(g_listen, (struct sockaddr*)&g_addr, &l))
    die("listen");
}

/* A fresh connection: *tx connected, *rx accepted; then a child is forked that keeps
   *tx (the parent closes it) and the parent keeps *rx (the child closes it).
   @return the child's pid in the parent, 0 in the child. */
static pid_t comp_connect_fork(int* tx, int* rx) {
  *tx = socket(AF_INET, SOCK_STREAM, 0);
  if (*tx < 0 || connect(*tx, (struct sockaddr*)&g_addr, sizeof g_addr)) die("connect");
  *rx = accept(g_listen, NULL, NULL);
  if (*rx < 0) die("accept");
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) die("fork");
  close(pid == 0 ? *rx : *tx);
  return pid;
}

/* The child sent without failing, and `out` holds `skip` bytes of `prefix` then the
   text, exactly; prints "ok NAME". */
static void comp_check(pid_t pid, const char* name, const char* out, size_t got, const char* prefix, size_t skip) {
  int status;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) die("%s: sender failed", name);
  if (got != g_len + skip || (skip && memcmp(out, prefix, skip)) || memcmp(out + skip, g_text, g_len))
    die("%s: %zu bytes, expected %zu", name, got, g_len + skip);
  printf("ok %s\n", name);
  fflush(stdout);
}
