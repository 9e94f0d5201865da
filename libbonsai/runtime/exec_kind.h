// SPDX-License-Identifier: MIT
// What kind of program an exec is about to start, as far as the library is concerned:
// a dynamic program the library reaches through LD_PRELOAD; a static
// one, or a Go one, which it cannot reach and which is then supervised instead
// (runtime/exec_supervise.h); a setuid/setgid one the loader strips LD_PRELOAD from,
// left alone. The judgement is bonsaictl run's too (abi/program_kind.h), sections
// included: a dynamic Go program linked without a build id (cgo, -ldflags=-buildid=)
// has no Go note, only .go.buildinfo, and preloaded its own calls went unlimited
// (t_sv_children: 937x a 2 MiB/s cap). A dynamic program costs an open, an fstat,
// three or four preads and a close (5.0-5.5 us by notes only, 7.3-8.7 us with the
// sections, on a loaded 2-core machine, against an exec's ~500 us); nothing is cached.
// And the file execvp() would run.
//
// Async-signal-safe, allocation-free, raw system calls only, no global written: runs
// after vfork() and in children of threaded processes. errno is kept.
#pragma once
#include <cstddef>

#include "abi/program_kind.h"

namespace bonsai {

using ExecKind = ProgramKind;

// Judges the file at `path` (Other: missing, unreadable, not ELF, not a regular file);
// `loader`: a dynamic program's loader and the libc it belongs to.
inline ExecKind exec_kind_of(const char* path, ProgramLoader* loader = nullptr) noexcept {
  return program_kind(path, GoLook::DynamicSections, nullptr, 0, loader);
}

// The file execvp() would run for `file` (a name without '/' is looked for in `path_env`,
// PATH's value, or "/bin:/usr/bin" when null): written to `out` (cap bytes).
// @return out, `file` itself when it holds a '/', or nullptr when no directory holds it.
const char* exec_path_find(const char* file, const char* path_env, char* out, size_t cap) noexcept;

}  // namespace bonsai
