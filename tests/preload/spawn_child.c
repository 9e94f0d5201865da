/* SPDX-License-Identifier: MIT
   spawn_child HOW PROG ARGS...: a dynamic parent starting PROG the ways a service does
   (issue #40: a static or Go child of a service process is supervised), waiting for it
   and printing how it ended: "status=N" or "signal=N", then "alive" (the parent goes
   on). HOW:
     spawn     posix_spawn(PROG)            spawnp   posix_spawnp(PROG) (PATH walked)
     vfork     vfork() + execv(PROG)        fork     fork() + execvp(PROG)
     execvp    execvp(PROG) in this process, after a failed execvp of a missing name
               (the PATH walk finds nothing: the caller must keep working)
     system    system("PROG ARGS...") (through /bin/sh) */
#define _GNU_SOURCE
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload_util.h"

extern char** environ;

static void report_end(pid_t pid) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) die("waitpid");
  if (WIFSIGNALED(st)) printf("signal=%d\n", WTERMSIG(st));
  else printf("status=%d\n", WEXITSTATUS(st));
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: spawn_child spawn|spawnp|vfork|fork|execvp|system PROG ARGS...\n");
    return 2;
  }
  const char* how = argv[1];
  char** cargv = argv + 2;
  pid_t pid = -1;
  if (!strcmp(how, "spawn") || !strcmp(how, "spawnp")) {
    int rc = how[5] ? posix_spawnp(&pid, cargv[0], NULL, NULL, cargv, environ)
                    : posix_spawn(&pid, cargv[0], NULL, NULL, cargv, environ);
    if (rc != 0) {
      errno = rc;
      die("posix_spawn %s", cargv[0]);
    }
    report_end(pid);
  } else if (!strcmp(how, "vfork")) {
    pid = vfork();
    if (pid == 0) {
      execv(cargv[0], cargv);
      _exit(127);
    }
    report_end(pid);
  } else if (!strcmp(how, "fork")) {
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
      execvp(cargv[0], cargv);
      _exit(127);
    }
    report_end(pid);
  } else if (!strcmp(how, "execvp")) {
    char* missing[] = {"bonsai-no-such-program", NULL};
    execvp(missing[0], missing);
    if (errno != ENOENT) die("execvp of a missing program: not ENOENT");
    printf("alive\n");  /* the caller works on after a failed exec */
    fflush(stdout);
    execvp(cargv[0], cargv);
    die("execvp %s", cargv[0]);
  } else if (!strcmp(how, "system")) {
    char cmd[4096] = "";
    for (char** a = cargv; *a; ++a) {
      strncat(cmd, *a, sizeof cmd - strlen(cmd) - 2);
      strcat(cmd, " ");
    }
    int st = system(cmd);
    if (st < 0) die("system");
    if (WIFSIGNALED(st)) printf("signal=%d\n", WTERMSIG(st));
    else printf("status=%d\n", WEXITSTATUS(st));
  } else {
    fprintf(stderr, "spawn_child: unknown HOW '%s'\n", how);
    return 2;
  }
  printf("alive\n");
  return 0;
}
