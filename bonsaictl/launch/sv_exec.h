// SPDX-License-Identifier: MIT
// `bonsaictl sv-exec PROGRAM [ARGS...]` (public: a container's command, argv[0] is
// PROGRAM, looked up in PATH) and `bonsaictl sv-exec -- PATH ARGV...` (internal: the
// trampoline through which a service process executes a static or Go program;
// libbonsai/runtime/exec_supervise.h turns such an exec into this one, and processes of
// older releases still call it: kept as it is). In the same process -- the program keeps its pid, its
// parent, its signal dispositions and mask, its descriptors and its exit status -- it
// starts a supervisor for the service (sv_launch.h: detached, one per supervised
// subtree), loads the seccomp filter, and execs PATH with ARGV. Not in `--help`'s
// list; its arguments are never parsed as options (a program's own `--help` or
// `--user` pass through).
//
// When supervision cannot start (seccomp refused, no segment), the program runs
// unsupervised: one line on stderr, and `stat` lists it as "NOT limited". Never exits
// but when PATH cannot be executed (126, 127: what a shell says).
#pragma once

namespace bonsai::ctl {

// argv: what follows "sv-exec". Returns only on failure: the exit status.
int sv_exec_main(int argc, char** argv);

}  // namespace bonsai::ctl
