// SPDX-License-Identifier: MIT
// What kind of program an exec is about to start, as far as the library is concerned
// (issue #40): a dynamic program the library reaches through LD_PRELOAD; a static
// one, or a Go one (Go makes its own system calls, even when linked to libc), which it
// cannot reach and which is then supervised instead (runtime/exec_supervise.h); a
// setuid/setgid one the loader strips LD_PRELOAD from, left alone. A #! script is
// judged by its interpreter. The same judgement as bonsaictl's launch_kind.h, made
// without allocation: a Go program is told by its build-id note (PT_NOTE "Go", type 4),
// not by its section names, so that a dynamic program costs an open, an fstat, one or
// two preads and a close (~3 us against an exec's ~500 us), and nothing is cached.
//
// Async-signal-safe, allocation-free, raw system calls only, no global written: runs
// after vfork() and in children of threaded processes. errno is kept.
#pragma once
#include <cstddef>

namespace bonsai {

enum class ExecKind { Dynamic, Static, Go, Setuid, Other };

// Judges the file at `path` (Other: missing, unreadable, not ELF64, not a regular file).
ExecKind exec_kind_of(const char* path) noexcept;

// The file execvp() would run for `file` (a name without '/' is looked for in `path_env`,
// PATH's value, or "/bin:/usr/bin" when null): written to `out` (cap bytes).
// @return out, `file` itself when it holds a '/', or nullptr when no directory holds it.
const char* exec_path_find(const char* file, const char* path_env, char* out, size_t cap) noexcept;

}  // namespace bonsai
