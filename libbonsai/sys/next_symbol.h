// SPDX-License-Identifier: MIT
// dlsym(RTLD_NEXT, name) without the loader: the objects loaded after this library
// (libc, and any preloaded library behind ours) are noted once by the constructor,
// and a name is then looked up in their hash tables (GNU, or the older SysV one) by
// plain reads. No lock, no allocation, async-signal-safe: a wrapper's first call may
// resolve libc's function anywhere (in a signal handler, a vfork()ed child, under the
// application's locks), so the constructor no longer resolves anything up front, and a
// process start pays for none of it (13 dlsym calls were ~25 us of every exec).
//
// It is also how the library reaches the libc functions it does not link:
// the glibc build needs nothing newer than GLIBC_2.17, so dlsym, dlopen, the
// cancellation hooks and the like -- newer, or in libdl/libpthread before glibc 2.34,
// which a program need not load -- are looked up here when first needed
// (`libc_symbol`, sys/late_bound.h), never linked: the loader has no version of them
// to refuse, and a process whose libc lacks one gets nullptr, never a start failure.
// Anything this does not handle (an IFUNC, an object with no hash table) answers nullptr:
// the caller falls back to dlsym, or to what it does without the function.
#pragma once

namespace bonsai {

// Notes the objects after this library in the main namespace's search order.
// @return false if this library is not in the main namespace's list (dlmopen): then
// next_symbol answers nullptr and dlsym does the work, as before. Objects from the first
// one that cannot be searched here on are not noted: names not found before it go to dlsym.
// Call once, from the constructor. Before it, next_symbol walks the list for each name.
bool next_objects_note() noexcept;

// @return true once next_objects_note() succeeded.
bool next_objects_ready() noexcept;

// The address dlsym(RTLD_NEXT, name) would give, or nullptr if not found here.
void* next_symbol(const char* name) noexcept;

// The address of `name` as dlsym(RTLD_DEFAULT) finds it among the objects the loader
// started the program with (the program, the preloads, libc ...), this library
// excepted: for libc's own functions (dlsym itself, pthread hooks) where next_symbol
// has no answer (this library loaded with dlmopen). nullptr if not found.
void* default_symbol(const char* name) noexcept;

// libc's `name`: next_symbol, else default_symbol. nullptr if neither finds it.
void* libc_symbol(const char* name) noexcept;

}  // namespace bonsai
