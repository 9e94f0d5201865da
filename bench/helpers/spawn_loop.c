// SPDX-License-Identifier: MIT
// Process start-up cost: starts a program N times in a row (posix_spawn + waitpid) under
// each of several environments, round after round (the variants interleaved, so a busy
// moment of the machine hits them alike; -i: start by start, steadier on a noisy machine,
// and no variant finds the caches warm from its own previous start), and prints the
// median ms per start of each variant and its ratio to the first, and the same of the
// children's CPU time (user + system, from wait4: what a start costs the machine, less
// sensitive than the wall time to other work on it). Run it without the library: each
// variant adds its own NAME=VALUE words to this process's environment for its children
// only (a NAME without '=' removes that variable).
//   spawn_loop [-i] [-n STARTS] [-r ROUNDS] -v 'LABEL [NAME=VALUE|NAME...]'... -- PROGRAM [ARGS]
// Output: one line per variant: "LABEL ms_per_start=M ratio=R cpu_ms=C cpu_ratio=CR rounds=K".
#define _GNU_SOURCE
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

#define MAX_VARIANTS 8
#define MAX_ROUNDS 64
#define MAX_ENV 4096

struct variant {
  char* label;
  char** envp;
  double ms[MAX_ROUNDS];   // wall time per start
  double cpu[MAX_ROUNDS];  // the child's CPU time (user + system) per start
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// environ without the names `words` sets or names, then the NAME=VALUE words.
static char** make_env(char* spec, char** label) {
  static char* words[64];
  int nw = 0;
  *label = strtok(spec, " ");
  for (char* w = strtok(NULL, " "); w && nw < 64; w = strtok(NULL, " ")) words[nw++] = w;
  char** out = calloc(MAX_ENV + 65, sizeof *out);
  int n = 0;
  for (char** e = environ; *e && n < MAX_ENV; ++e) {
    int replaced = 0;
    for (int i = 0; i < nw; ++i) {
      const char* eq = strchr(words[i], '=');
      size_t len = eq ? (size_t)(eq - words[i]) : strlen(words[i]);
      if (strncmp(*e, words[i], len) == 0 && (*e)[len] == '=') replaced = 1;
    }
    if (!replaced) out[n++] = *e;
  }
  for (int i = 0; i < nw; ++i)
    if (strchr(words[i], '=')) out[n++] = words[i];
  return out;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  int starts = 400, rounds = 5, nv = 0, opt, interleave = 0;
  struct variant v[MAX_VARIANTS];
  while ((opt = getopt(argc, argv, "in:r:v:")) != -1) {
    if (opt == 'i') interleave = 1;
    else if (opt == 'n') starts = atoi(optarg);
    else if (opt == 'r') rounds = atoi(optarg);
    else if (opt == 'v' && nv < MAX_VARIANTS) {
      v[nv].envp = make_env(optarg, &v[nv].label);
      ++nv;
    } else {
      fprintf(stderr, "usage: spawn_loop [-i] [-n STARTS] [-r ROUNDS] -v 'LABEL [NAME=VALUE|NAME...]'... -- PROGRAM [ARGS]\n");
      return 2;
    }
  }
  if (optind >= argc || nv == 0 || starts < 1 || rounds < 1 || rounds > MAX_ROUNDS) {
    fprintf(stderr, "spawn_loop: need -v and a program (1..%d rounds)\n", MAX_ROUNDS);
    return 2;
  }
  char** prog = argv + optind;
  for (int r = 0; r < rounds; ++r) {
    double wall_ns[MAX_VARIANTS] = {0}, cpu_us[MAX_VARIANTS] = {0};
    // -i: variant after variant for every start; else all starts of one variant, then the next.
    int outer = interleave ? starts : nv, inner = interleave ? nv : starts;
    for (int a = 0; a < outer; ++a) {
      for (int b = 0; b < inner; ++b) {
        int k = interleave ? (r + a + b) % nv : (r + a) % nv;  // no variant keeps a fixed position
        uint64_t t0 = now_ns();
        pid_t pid;
        int rc = posix_spawn(&pid, prog[0], NULL, NULL, prog, v[k].envp);
        if (rc != 0) {
          fprintf(stderr, "spawn_loop: %s: %s\n", prog[0], strerror(rc));
          return 1;
        }
        int st;
        struct rusage ru;
        if (wait4(pid, &st, 0, &ru) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
          fprintf(stderr, "spawn_loop: %s (%s) failed\n", prog[0], v[k].label);
          return 1;
        }
        wall_ns[k] += (double)(now_ns() - t0);
        cpu_us[k] += (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + (double)ru.ru_utime.tv_usec +
                     (double)ru.ru_stime.tv_usec;
      }
    }
    for (int k = 0; k < nv; ++k) {
      v[k].ms[r] = wall_ns[k] / 1e6 / starts;
      v[k].cpu[r] = cpu_us[k] / 1e3 / starts;
    }
  }
  double base = 0, cpu_base = 0;
  for (int k = 0; k < nv; ++k) {
    qsort(v[k].ms, (size_t)rounds, sizeof(double), cmp);
    qsort(v[k].cpu, (size_t)rounds, sizeof(double), cmp);
    double med = v[k].ms[rounds / 2], cpu = v[k].cpu[rounds / 2];
    if (k == 0) base = med, cpu_base = cpu;
    printf("%s ms_per_start=%.4f ratio=%.3f cpu_ms=%.4f cpu_ratio=%.3f rounds=%d\n", v[k].label, med, med / base,
           cpu, cpu_base > 0 ? cpu / cpu_base : 0, rounds);
  }
  return 0;
}
