// SPDX-License-Identifier: MIT
// What kind of program a file is, as far as LD_PRELOAD is concerned: a dynamic program
// the library reaches; a static one, or a Go one (Go makes its own system calls, even
// when linked to libc), which it cannot reach and which is supervised instead; a
// setuid/setgid one the loader strips LD_PRELOAD from (and that supervision would strip
// of its privileges) -- when its exec changes the caller's ids: root's setuid-root
// program (or a user's own setuid one) keeps LD_PRELOAD and is judged by what it is. A #! script is judged by its interpreter. One judgement for
// bonsaictl (`run`: launch_kind.h) and the library (a service process's exec:
// runtime/exec_kind.h), so the two never disagree about a program.
//
// From the ELF header and program headers (32- or 64-bit): PT_INTERP is dynamic; a
// PT_NOTE holding Go's build id (name "Go", type 4) is Go. A dynamic program costs an
// open, an fstat, one or two preads and a close (~3 us against an exec's ~500 us).
// GoLook::Sections also reads the section names (.go.buildinfo, .note.go.buildid): a Go
// program linked without a build id (-ldflags=-buildid=) has no note, but these.
//
// Async-signal-safe, allocation-free, raw system calls only, no global written: runs
// after vfork() and in children of threaded processes. errno is kept.
#pragma once
#include <cstddef>
#include <cstdint>

namespace bonsai {

enum class ProgramKind : uint8_t { Dynamic, Static, Go, Setuid, Other };

enum class GoLook : uint8_t {
  Notes,     // Go's build-id note only: what the headers' first read holds (enough where
             // only the loader matters: bonsaictl's sv-exec and cdi)
  Sections,  // and the section names: a few more reads at the end of the file (bonsaictl
             // run and the OCI runtime)
  DynamicSections,  // the section names of a dynamic program only: a static one is
                    // supervised whether Go's or not (the library at every exec of a
                    // service's processes: three reads less per static child)
};

// Which build of the library a dynamic program's loader can take (see
// docs/reference/libc.md), told by its PT_INTERP's file name, ELF class and machine: glibc's
// loader (ld-linux-x86-64.so.2) takes the glibc build, musl's (ld-musl-x86_64.so.1)
// the musl one; any other (a 32-bit or x32 program, another libc) neither: Foreign.
enum class ProgramLibc : uint8_t { None, Glibc, Musl, Foreign };

// A dynamic program's loader: what `program_kind` found (libc None for anything else).
struct ProgramLoader {
  ProgramLibc libc = ProgramLibc::None;
  char interp[128] = {};  // PT_INTERP, NUL-terminated (cut to fit)
};

// The libc a loader of this path, ELF class and machine belongs to. Pure.
ProgramLibc program_libc(const char* interp, unsigned char elf_class, uint16_t machine) noexcept;

// Judges the file at `path` (Other: missing, unreadable, not a regular file, not ELF,
// a script whose interpreter is none of these or is nested more than 4 deep). When
// `judged` is given, the file the judgement is about (`path`, or a script's
// interpreter) is written there, NUL-terminated (cut to `judged_cap`); when `loader` is
// given, a dynamic program's loader and its libc (a Go program linked to libc too).
ProgramKind program_kind(const char* path, GoLook look, char* judged = nullptr, size_t judged_cap = 0,
                         ProgramLoader* loader = nullptr) noexcept;

}  // namespace bonsai
