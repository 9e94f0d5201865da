// SPDX-License-Identifier: MIT
// Starts a writer through one exec or spawn call with an empty or foreign
// environment (issue #16), the way services scrub their children's environment:
//   exec_calls MODE BYTES     MODE: execve execv execvp execvpe execl execle execlp
//                             fexecve execveat posix_spawn posix_spawnp vfork
//                             closefrom_setuid close_range_setuid close_loop_setuid
//                             sys_close_range_setuid sys_close_loop_setuid
//                             foreign (BONSAI_SERVICE=$EXEC_FOREIGN given) leave (BONSAI_LEAVE=1)
//   exec_calls write BYTES    the writer: BYTES to /dev/null in 64 KiB write() calls
// Exits with the writer's status (the parent waits for it).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

static int writer(long long bytes) {
  static char buf[65536];
  int fd = open("/dev/null", O_WRONLY);
  if (fd < 0) return 3;
  while (bytes > 0) {
    size_t n = bytes < (long long)sizeof buf ? (size_t)bytes : sizeof buf;
    ssize_t r = write(fd, buf, n);
    if (r <= 0) return 4;
    bytes -= r;
  }
  return 0;
}

static void drop_to_nobody(void) {
  if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) {
    perror("exec_calls: setresuid");
    _exit(5);
  }
}

static int wait_child(pid_t pid) {
  int st;
  if (waitpid(pid, &st, 0) != pid) return 6;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 7;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: exec_calls MODE BYTES\n");
    return 2;
  }
  const char* mode = argv[1];
  if (strcmp(mode, "write") == 0) return writer(atoll(argv[2]));

  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 2;
  self[n] = '\0';
  char* child_argv[] = {self, "write", argv[2], NULL};
  char* empty_env[] = {NULL};
  char* foreign_env[] = {"PATH=/usr/bin:/bin", "LANG=C", NULL};
  char other[128];
  snprintf(other, sizeof other, "BONSAI_SERVICE=%s", getenv("EXEC_FOREIGN") ? getenv("EXEC_FOREIGN") : "other");
  char* other_env[] = {other, NULL};
  char* leave_env[] = {"BONSAI_LEAVE=1", NULL};

  if (strcmp(mode, "posix_spawn") == 0 || strcmp(mode, "posix_spawnp") == 0) {
    pid_t pid;
    int e = mode[11] ? posix_spawnp(&pid, self, NULL, NULL, child_argv, empty_env)
                     : posix_spawn(&pid, self, NULL, NULL, child_argv, empty_env);
    if (e) {
      fprintf(stderr, "exec_calls: %s: %s\n", mode, strerror(e));
      return 2;
    }
    return wait_child(pid);
  }
  if (strcmp(mode, "vfork") == 0) {
    pid_t pid = vfork();
    if (pid == 0) {
      execve(self, child_argv, empty_env);
      _exit(8);
    }
    return pid < 0 ? 2 : wait_child(pid);
  }

  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid > 0) return wait_child(pid);
  // The child: exec the writer as MODE asks, after clearing its own environment
  // (the calls without an envp argument use environ).
  clearenv();
  environ = foreign_env;
  if (strcmp(mode, "execve") == 0) execve(self, child_argv, empty_env);
  else if (strcmp(mode, "execv") == 0) execv(self, child_argv);
  else if (strcmp(mode, "execvp") == 0) execvp(self, child_argv);
  else if (strcmp(mode, "execvpe") == 0) execvpe(self, child_argv, foreign_env);
  else if (strcmp(mode, "execl") == 0) execl(self, self, "write", argv[2], (char*)NULL);
  else if (strcmp(mode, "execle") == 0) execle(self, self, "write", argv[2], (char*)NULL, empty_env);
  else if (strcmp(mode, "execlp") == 0) execlp(self, self, "write", argv[2], (char*)NULL);
  else if (strcmp(mode, "fexecve") == 0) {
    int fd = open(self, O_RDONLY | O_CLOEXEC);
    fexecve(fd, child_argv, empty_env);
  } else if (strcmp(mode, "execveat") == 0) {
    execveat(AT_FDCWD, self, child_argv, foreign_env, 0);
  } else if (strcmp(mode, "closefrom_setuid") == 0) {
    closefrom(3);
    drop_to_nobody();
    execve(self, child_argv, empty_env);
  } else if (strcmp(mode, "close_range_setuid") == 0) {
    close_range(3, ~0U, 0);
    drop_to_nobody();
    execve(self, child_argv, empty_env);
  } else if (strcmp(mode, "sys_close_range_setuid") == 0) {  // raw closers (CPython, Rust std)
    syscall(SYS_close_range, 3, ~0U, 0);
    drop_to_nobody();
    execve(self, child_argv, empty_env);
  } else if (strcmp(mode, "sys_close_loop_setuid") == 0) {
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = 3; fd < max && fd < 65536; ++fd) syscall(SYS_close, fd);
    drop_to_nobody();
    execve(self, child_argv, empty_env);
  } else if (strcmp(mode, "close_loop_setuid") == 0) {
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = 3; fd < max && fd < 65536; ++fd) close((int)fd);
    drop_to_nobody();
    execve(self, child_argv, empty_env);
  } else if (strcmp(mode, "foreign") == 0) {
    execve(self, child_argv, other_env);
  } else if (strcmp(mode, "leave") == 0) {
    execve(self, child_argv, leave_env);
  } else {
    fprintf(stderr, "exec_calls: unknown mode %s\n", mode);
    _exit(2);
  }
  fprintf(stderr, "exec_calls: %s failed: %s\n", mode, strerror(errno));
  _exit(9);
}
