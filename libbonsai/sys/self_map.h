// SPDX-License-Identifier: MIT
// This shared object's entry in the dynamic loader's list of loaded objects: its load
// address, its dynamic section and the path it was loaded by (l_name, the loader's
// string, valid as long as the object is loaded). Found by its own _DYNAMIC, without
// dladdr, whose page of libc a start would otherwise fault in (issue #34).
#pragma once

#include <elf.h>
#include <link.h>

namespace bonsai {

// @return the first object of the main namespace's list (the program), or nullptr.
inline const link_map* loaded_objects() noexcept { return _r_debug.r_map; }

// @return our link_map, or nullptr when not loaded the usual way (dlmopen, an audit namespace).
inline const link_map* self_link_map() noexcept {
  for (const link_map* m = loaded_objects(); m; m = m->l_next)
    if (m->l_ld == _DYNAMIC) return m;
  return nullptr;
}

}  // namespace bonsai
