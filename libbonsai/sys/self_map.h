// SPDX-License-Identifier: MIT
// This shared object's entry in the dynamic loader's list of loaded objects: its load
// address, its dynamic section and the path it was loaded by (l_name, the loader's
// string, valid as long as the object is loaded). Found by its own _DYNAMIC, without
// dladdr, whose page of libc a start would otherwise fault in.
// glibc publishes the list as _r_debug; musl as _dl_debug_addr (its debugger hook,
// the same layout: musl's loaded objects begin as a link_map does).
#pragma once

#include <elf.h>
#include <link.h>

#if !defined(__GLIBC__)
extern "C" {
extern struct r_debug* _dl_debug_addr;  // musl
extern ElfW(Dyn) _DYNAMIC[];            // the linker's; glibc's <link.h> declares it
}
#endif

namespace bonsai {

// @return the first object of the main namespace's list (the program), or nullptr.
inline const link_map* loaded_objects() noexcept {
#if defined(__GLIBC__)
  return _r_debug.r_map;
#else
  return _dl_debug_addr ? _dl_debug_addr->r_map : nullptr;
#endif
}

// @return our link_map, or nullptr when not loaded the usual way (dlmopen, an audit namespace).
inline const link_map* self_link_map() noexcept {
  for (const link_map* m = loaded_objects(); m; m = m->l_next)
    if (m->l_ld == _DYNAMIC) return m;
  return nullptr;
}

}  // namespace bonsai
