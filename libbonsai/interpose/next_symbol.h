// SPDX-License-Identifier: MIT
// dlsym(RTLD_NEXT, name) without the loader: the objects loaded after this library
// (libc, and any preloaded library behind ours) are noted once by the constructor,
// and a name is then looked up in their GNU hash tables by plain reads. No lock, no
// allocation, async-signal-safe: a wrapper's first call may resolve glibc's function
// anywhere (in a signal handler, a vfork()ed child, under the application's locks),
// so the constructor no longer resolves anything up front, and a process start pays
// for none of it (issue #34: 13 dlsym calls were ~25 us of every exec).
// Anything this does not handle (an object without a GNU hash table, an IFUNC, a
// lookup before the constructor) answers nullptr: the caller falls back to dlsym.
#pragma once

namespace bonsai::real {

// Notes the objects after this library in the main namespace's search order.
// @return false if this library is not in the main namespace's list (dlmopen): then
// next_symbol answers nullptr and dlsym does the work, as before. Objects from the first
// one without a GNU hash table on are not noted: names not found before it go to dlsym.
// Call once, from the constructor.
bool next_objects_note() noexcept;

// @return true once next_objects_note() succeeded.
bool next_objects_ready() noexcept;

// The address dlsym(RTLD_NEXT, name) would give, or nullptr if not found here.
void* next_symbol(const char* name) noexcept;

}  // namespace bonsai::real
