// SPDX-License-Identifier: MIT
// The PATH walk of execvp() (see exec_kind.h; the judgement itself is
// abi/program_kind.cc). Raw system calls and the caller's buffer only.
#include "runtime/exec_kind.h"

#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "sys/raw_syscall.h"

namespace bonsai {

const char* exec_path_find(const char* file, const char* path_env, char* out, size_t cap) noexcept {
  if (!file || !*file) return nullptr;
  if (std::strchr(file, '/')) return file;
  size_t flen = std::strlen(file);
  const char* p = path_env ? path_env : "/bin:/usr/bin";
  for (;;) {
    const char* end = std::strchr(p, ':');
    size_t dlen = end ? static_cast<size_t>(end - p) : std::strlen(p);
    if (dlen + 1 + flen + 1 <= cap) {
      size_t o = 0;
      if (dlen == 0) out[o++] = '.';  // an empty entry is the current directory
      std::memcpy(out + o, p, dlen);
      o += dlen;
      out[o++] = '/';
      std::memcpy(out + o, file, flen + 1);
      if (raw_syscall4(SYS_faccessat, AT_FDCWD, reinterpret_cast<long>(out), X_OK, 0) == 0) return out;
    }
    if (!end) return nullptr;
    p = end + 1;
  }
}

}  // namespace bonsai
