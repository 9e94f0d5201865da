// SPDX-License-Identifier: MIT
// getenv() that also works before libc has set up `environ`: a wrapper called from
// an executable's .preinit_array runs before that, so we read /proc/self/environ
// (raw system calls, a static buffer) instead. Set-up only, never the fast path.
#pragma once

namespace bonsai {

// @return the value of `name` in this process's environment, or nullptr.
const char* env_get(const char* name) noexcept;

// env_get for a name that begins with "BONSAI_" (every option, runtime/options.h): when
// the environment holds no BONSAI_* variable at all (a start with the library and no
// setting), answers nullptr without reading the name or calling getenv, whose pages a
// start would otherwise fault in. Set-up only.
const char* env_get_bonsai(const char* name) noexcept;

// Does environment entry `e` start with "BONSAI_"? Compared against immediates: no
// string constant (.rodata) and no libc function is touched for the other entries.
inline bool env_is_bonsai(const char* e) noexcept {
  return e[0] == 'B' && e[1] == 'O' && e[2] == 'N' && e[3] == 'S' && e[4] == 'A' && e[5] == 'I' && e[6] == '_';
}

// Calls `fn(entry, ctx)` for every "NAME=value" entry of this process's environment
// (`environ`, or /proc/self/environ before libc set it up). Set-up only.
void env_each(void (*fn)(const char* entry, void* ctx), void* ctx) noexcept;

}  // namespace bonsai
