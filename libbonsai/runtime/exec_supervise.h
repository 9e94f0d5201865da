// SPDX-License-Identifier: MIT
// A static or Go program executed by a service process is supervised:
// LD_PRELOAD cannot reach it, so the exec is turned into an exec of bonsaictl's
// trampoline (`BONSAI_CTL sv-exec -- PATH ARGV...`, set by `bonsaictl run`), which, in
// the same process, starts a supervisor for the service, loads the seccomp filter,
// hands the listener over and execs PATH with ARGV: the program keeps its pid, its
// parent, its signal dispositions and mask, its descriptors and its exit status.
// Everything that needs libseccomp, fork, sockets or memory happens in bonsaictl,
// after the exec, never in the host process nor after a vfork().
//
// Async-signal-safe, allocation-free (arrays on the caller's stack, or in memory
// mapped for them when large), no global written but the once-flags of its messages.
#pragma once
#include <cstddef>

namespace bonsai {

struct SvRedirect {
  const char* path;   // the trampoline to exec instead
  char* const* argv;
  char* const* envp;
  void* mapped;       // unmapped by exec_supervise_undo
  size_t mapped_len;
  bool foreign;       // a dynamic program of another libc ("sv-exec --libc")
};

// Is this process in a service (BONSAI_SERVICE captured at set-up)? One scan of a
// few captured settings: when false, nothing else here is worth calling.
bool exec_supervise_wanted() noexcept;

// Should the exec of `path` (the file to run, PATH already walked) go through the
// trampoline? Only in a service process (BONSAI_SERVICE captured), for a static or Go
// target, when the new environment does not leave (BONSAI_LEAVE). Says once when a
// setuid/setgid target is left alone, or when there is no trampoline (BONSAI_CTL unset).
// A dynamic target whose loader takes neither build of the library (a 32-bit program,
// another libc: abi/program_kind.h ProgramLibc::Foreign) goes through it too,
// with "--libc": the trampoline says so in one line, marks it NOT limited in the
// service's stat and runs it without the library (no loader error).
// @return true with `out` set: argv = [ctl, "sv-exec", ["--libc",] "--", path, argv...],
// envp = `envp` with BONSAI_LEAVE=1 (the library does nothing in the trampoline).
bool exec_supervise_plan(const char* path, char* const* argv, char* const* envp, char** stack, size_t stack_slots,
                         SvRedirect& out) noexcept;

// Joins the service's running supervisor (abi/sv_join.h) instead of starting one
// through the trampoline (`r` from exec_supervise_plan): connects to its socket in the
// segment owner's rendezvous directory (used only if it is this user's and private), to
// a peer of this user (no root exception) in this pid namespace only, loads the filter
// it sends with a new listener and hands the listener over. @return true: this process
// is supervised now, and `r.envp` is the program's environment (BONSAI_LEAVE=1, no
// BONSAI_SERVICE nor BONSAI_SHM_FD, the segment descriptor close-on-exec): the caller
// executes the program itself with it. false: nothing changed (no supervisor answers,
// the directory or the peer is not this user's, another user's segment, a descriptor
// limit below the hand-over's, a filter too large): the trampoline's way, whose
// supervisor says what is wrong with the rendezvous. Only for an exec made in the
// process itself (execve and its family, not posix_spawn).
bool exec_supervise_join(SvRedirect& r, const char* path) noexcept;

// Is the trampoline needed for `r`, when no running supervisor was joined? Not for a
// static or Go program of a service without a limit or a timed protected call
// (abi/sv_join.h, sv_service_supervised): the trampoline would start no supervisor and
// execute it as asked, so the caller does that itself (no exec of bonsaictl, ~8 ms per
// child). Unmaps `r`'s memory when it answers false. Raw system calls only.
bool exec_supervise_needed(SvRedirect& r) noexcept;

// After the trampoline's exec failed (`err`): says so once; the caller then runs the
// program as asked, unsupervised. Unmaps. errno kept.
void exec_supervise_failed(const SvRedirect& r, const char* path, int err) noexcept;

// The PATH of the current environment (execvp and posix_spawnp look there), or nullptr.
const char* exec_supervise_path_env() noexcept;

}  // namespace bonsai
