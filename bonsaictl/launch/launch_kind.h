// SPDX-License-Identifier: MIT
// What kind of program `run` is about to start, as far as LD_PRELOAD is concerned:
// a dynamic program the library reaches; a static one or a Go one (Go makes its own
// system calls, even when linked to libc) it cannot reach, so `run` supervises it;
// a setuid/setgid one the loader strips LD_PRELOAD from, and that supervision would
// strip of its privileges (no_new_privs). A #! script is judged by its interpreter.
// The judgement is the library's too (abi/program_kind.h); `run` also reads the section
// names for Go (a Go program linked without a build id has no note).
#pragma once
#include <string>

#include "abi/program_kind.h"

namespace bonsai::ctl {

using LaunchKind = ProgramKind;

struct LaunchInfo {
  LaunchKind kind = LaunchKind::Other;
  std::string program;  // the file judged: `path`, or a script's interpreter
  std::string what;     // "is statically linked", "is a Go program", "is setuid", ...
  ProgramLoader loader; // a dynamic program's loader, and which build of the library it takes
};

// A dynamic program whose loader takes neither build of the library (a 32-bit program,
// another libc: docs/reference/libc.md). `run` starts it without the library, NOT
// limited, and says so.
inline bool launch_foreign_libc(const LaunchInfo& i) {
  return i.kind == LaunchKind::Dynamic && i.loader.libc == ProgramLibc::Foreign;
}

LaunchInfo launch_inspect(const std::string& path);

// True when LD_PRELOAD cannot reach the program and supervision can.
inline bool launch_needs_supervisor(const LaunchInfo& i) {
  return i.kind == LaunchKind::Static || i.kind == LaunchKind::Go;
}

// @return a plain warning if `path` cannot be limited through LD_PRELOAD (setuid or
// setgid, statically linked, Go; for a #! script, its interpreter), else "".
std::string preload_warning(const std::string& path);

}  // namespace bonsai::ctl
