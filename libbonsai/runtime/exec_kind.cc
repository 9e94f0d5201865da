// SPDX-License-Identifier: MIT
// Telling dynamic, static, Go and setuid programs apart before an exec (see
// exec_kind.h): the ELF header and program headers (PT_INTERP: dynamic; a PT_NOTE
// holding Go's build id: Go). Raw system calls and the caller's stack only.
#include "runtime/exec_kind.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "sys/raw_syscall.h"

namespace bonsai {
namespace {

constexpr size_t kHead = 2048;   // the ELF header, the program headers and, nearly always, the notes
constexpr unsigned kMaxPhdrs = 64;
constexpr int kMaxScriptDepth = 2;

long pread_raw(int fd, void* buf, size_t n, uint64_t off) {
  return raw_syscall4(SYS_pread64, fd, reinterpret_cast<long>(buf), static_cast<long>(n), static_cast<long>(off));
}

// A note segment holding the Go toolchain's build id (name "Go\0\0", namesz 4; type 4), in its first
// 512 bytes (after the GNU build id and ABI tag of a cgo program linked externally).
// Read from `head` (the file's first `head_len` bytes) when the notes lie there, as they
// usually do, else with one pread.
bool note_is_go(int fd, const Elf64_Phdr& ph, const unsigned char* head, size_t head_len) {
  alignas(Elf64_Nhdr) unsigned char buf[512];
  size_t want = ph.p_filesz < sizeof buf ? static_cast<size_t>(ph.p_filesz) : sizeof buf;
  long got;
  if (ph.p_offset + want <= head_len) {
    std::memcpy(buf, head + ph.p_offset, want);
    got = static_cast<long>(want);
  } else {
    got = pread_raw(fd, buf, want, ph.p_offset);
  }
  size_t at = 0;
  while (got > 0 && at + sizeof(Elf64_Nhdr) <= static_cast<size_t>(got)) {
    Elf64_Nhdr nh;
    std::memcpy(&nh, buf + at, sizeof nh);
    const unsigned char* name = buf + at + sizeof nh;
    if ((nh.n_namesz == 3 || nh.n_namesz == 4) && nh.n_type == 4 && at + sizeof nh + 4 <= static_cast<size_t>(got) &&
        std::memcmp(name, "Go", 3) == 0)
      return true;
    at += sizeof nh + ((nh.n_namesz + 3) & ~3u) + ((nh.n_descsz + 3) & ~3u);
  }
  return false;
}

ExecKind judge_elf(int fd, const unsigned char* head, size_t got) {
  if (got < sizeof(Elf64_Ehdr) || head[EI_CLASS] != ELFCLASS64) return ExecKind::Other;
  Elf64_Ehdr eh;
  std::memcpy(&eh, head, sizeof eh);
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > kMaxPhdrs) return ExecKind::Other;
  alignas(Elf64_Phdr) unsigned char ph_buf[kMaxPhdrs * sizeof(Elf64_Phdr)];
  size_t ph_len = eh.e_phnum * sizeof(Elf64_Phdr);
  const unsigned char* phs = head + eh.e_phoff;
  if (eh.e_phoff + ph_len > got) {  // not in the first read: one more
    if (pread_raw(fd, ph_buf, ph_len, eh.e_phoff) != static_cast<long>(ph_len)) return ExecKind::Other;
    phs = ph_buf;
  }
  bool dynamic = false, go = false;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, phs + i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_INTERP) dynamic = true;
    else if (ph.p_type == PT_NOTE && !go) go = note_is_go(fd, ph, head, got);
  }
  return go ? ExecKind::Go : dynamic ? ExecKind::Dynamic : ExecKind::Static;
}

ExecKind judge(const char* path, int depth) {
  long fd = raw_syscall4(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC | O_NOCTTY, 0);
  if (fd < 0) return ExecKind::Other;
  ExecKind kind = ExecKind::Other;
  struct stat st;
  alignas(Elf64_Ehdr) unsigned char head[kHead];
  long got = 0;
  if (raw_syscall3(SYS_fstat, fd, reinterpret_cast<long>(&st), 0) == 0 && S_ISREG(st.st_mode)) {
    if (st.st_mode & (S_ISUID | S_ISGID)) kind = ExecKind::Setuid;
    else got = pread_raw(static_cast<int>(fd), head, sizeof head - 1, 0);
  }
  if (got >= 4 && std::memcmp(head, ELFMAG, SELFMAG) == 0) {
    kind = judge_elf(static_cast<int>(fd), head, static_cast<size_t>(got));
  } else if (got > 2 && head[0] == '#' && head[1] == '!' && depth < kMaxScriptDepth) {
    head[got] = '\0';
    char* b = reinterpret_cast<char*>(head) + 2;
    while (*b == ' ' || *b == '\t') ++b;
    char* e = b;
    while (*e && *e != ' ' && *e != '\t' && *e != '\n') ++e;
    *e = '\0';
    raw_syscall3(SYS_close, fd, 0, 0);
    return *b == '/' ? judge(b, depth + 1) : ExecKind::Other;
  }
  raw_syscall3(SYS_close, fd, 0, 0);
  return kind;
}

}  // namespace

ExecKind exec_kind_of(const char* path) noexcept {
  if (!path || !*path) return ExecKind::Other;
  int saved = errno;
  ExecKind k = judge(path, 0);
  errno = saved;
  return k;
}

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
