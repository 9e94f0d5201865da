// SPDX-License-Identifier: MIT
// Telling dynamic, static, Go and setuid programs apart (see program_kind.h): the ELF
// header and program headers (PT_INTERP: dynamic; a PT_NOTE holding Go's build id: Go),
// and for GoLook::Sections the section names. Raw system calls and the caller's stack
// only (~6 KiB of it).
#include "abi/program_kind.h"

#include <cerrno>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "sys/raw_syscall.h"

namespace bonsai {
namespace {

constexpr size_t kHead = 2048;       // the ELF header, the program headers and, nearly always, the notes
constexpr unsigned kMaxPhdrs = 64;
constexpr int kMaxScriptDepth = 4;   // the kernel's: 4 interpreters in a row at most
constexpr size_t kInterpMax = 256;   // the kernel reads a #! line from the file's first 256 bytes
constexpr unsigned kMaxSections = 4096;

struct Elf32 {
  using Ehdr = Elf32_Ehdr;
  using Phdr = Elf32_Phdr;
  using Shdr = Elf32_Shdr;
};
struct Elf64 {
  using Ehdr = Elf64_Ehdr;
  using Phdr = Elf64_Phdr;
  using Shdr = Elf64_Shdr;
};
static_assert(sizeof(Elf32_Nhdr) == sizeof(Elf64_Nhdr), "one note layout for both classes");

long pread_raw(int fd, void* buf, size_t n, uint64_t off) {
  return raw_syscall4(SYS_pread64, fd, reinterpret_cast<long>(buf), static_cast<long>(n), static_cast<long>(off));
}

// Bytes [off, off + n) of the file: from `head` (its first `head_len` bytes) when they
// lie there, else with one pread. @return the bytes had.
long read_at(int fd, void* buf, size_t n, uint64_t off, const unsigned char* head, size_t head_len) {
  if (off <= head_len && n <= head_len - off) {
    std::memcpy(buf, head + off, n);
    return static_cast<long>(n);
  }
  return pread_raw(fd, buf, n, off);
}

// A note segment holding the Go toolchain's build id (name "Go\0\0", namesz 4; type 4),
// in its first 512 bytes (after the GNU build id and ABI tag of a cgo program linked
// externally).
bool note_is_go(int fd, uint64_t offset, uint64_t size, const unsigned char* head, size_t head_len) {
  alignas(Elf64_Nhdr) unsigned char buf[512];
  size_t want = size < sizeof buf ? static_cast<size_t>(size) : sizeof buf;
  long got = read_at(fd, buf, want, offset, head, head_len);
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

// A section named .go.buildinfo or .note.go.buildid: what the Go toolchain writes even
// without a build id. Apart from judge_elf: its buffers are on the stack only when used.
template <class E>
[[gnu::noinline]] bool sections_say_go(int fd, const typename E::Ehdr& eh) {
  using Shdr = typename E::Shdr;
  if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(Shdr) || eh.e_shnum == 0 || eh.e_shnum > kMaxSections ||
      eh.e_shstrndx >= eh.e_shnum)
    return false;
  Shdr names;
  if (pread_raw(fd, &names, sizeof names, eh.e_shoff + uint64_t{eh.e_shstrndx} * sizeof(Shdr)) !=
          static_cast<long>(sizeof names) ||
      names.sh_size > (1u << 20))
    return false;
  // The names' table in one read when small (it nearly always is), else each name apart.
  unsigned char strtab[1024];
  long strtab_len = names.sh_size <= sizeof strtab ? pread_raw(fd, strtab, names.sh_size, names.sh_offset) : -1;
  if (strtab_len != static_cast<long>(names.sh_size)) strtab_len = 0;
  static constexpr char kGoNames[][18] = {".go.buildinfo", ".note.go.buildid"};  // arrays: no relocation
  constexpr unsigned kBatch = 16;
  alignas(Shdr) unsigned char batch[kBatch * sizeof(Shdr)];
  for (unsigned i = 0; i < eh.e_shnum; i += kBatch) {
    unsigned k = eh.e_shnum - i < kBatch ? eh.e_shnum - i : kBatch;
    if (pread_raw(fd, batch, k * sizeof(Shdr), eh.e_shoff + uint64_t{i} * sizeof(Shdr)) !=
        static_cast<long>(k * sizeof(Shdr)))
      return false;
    for (unsigned j = 0; j < k; ++j) {
      Shdr sh;
      std::memcpy(&sh, batch + j * sizeof sh, sizeof sh);
      if (sh.sh_name >= names.sh_size) continue;
      char name[18];  // the longer Go name and its NUL
      size_t room = static_cast<size_t>(names.sh_size - sh.sh_name);
      size_t n = room < sizeof name ? room : sizeof name;
      if (strtab_len) std::memcpy(name, strtab + sh.sh_name, n);
      else if (pread_raw(fd, name, n, names.sh_offset + sh.sh_name) != static_cast<long>(n)) continue;
      for (const char* go : kGoNames) {
        size_t len = std::strlen(go) + 1;
        if (n >= len && std::memcmp(name, go, len) == 0) return true;
      }
    }
  }
  return false;
}

// A dynamic program's PT_INTERP into `loader` (cut to fit), and its libc.
void note_loader(int fd, uint64_t off, uint64_t size, const unsigned char* head, size_t got, unsigned char cls,
                 uint16_t machine, ProgramLoader& loader) {
  size_t want = size < sizeof loader.interp - 1 ? static_cast<size_t>(size) : sizeof loader.interp - 1;
  long n = read_at(fd, loader.interp, want, off, head, got);
  loader.interp[n > 0 ? n : 0] = '\0';
  loader.libc = program_libc(loader.interp, cls, machine);
}

template <class E>
ProgramKind judge_elf(int fd, const unsigned char* head, size_t got, GoLook look, ProgramLoader* loader) {
  using Ehdr = typename E::Ehdr;
  using Phdr = typename E::Phdr;
  if (got < sizeof(Ehdr)) return ProgramKind::Other;
  Ehdr eh;
  std::memcpy(&eh, head, sizeof eh);
  if (eh.e_phentsize != sizeof(Phdr) || eh.e_phnum == 0 || eh.e_phnum > kMaxPhdrs) return ProgramKind::Other;
  alignas(Phdr) unsigned char phs[kMaxPhdrs * sizeof(Phdr)];
  size_t ph_len = eh.e_phnum * sizeof(Phdr);
  if (read_at(fd, phs, ph_len, eh.e_phoff, head, got) != static_cast<long>(ph_len)) return ProgramKind::Other;
  bool dynamic = false, go = false;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Phdr ph;
    std::memcpy(&ph, phs + i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_INTERP) {
      dynamic = true;
      if (loader) note_loader(fd, ph.p_offset, ph.p_filesz, head, got, head[EI_CLASS], eh.e_machine, *loader);
    } else if (ph.p_type == PT_NOTE && !go) go = note_is_go(fd, ph.p_offset, ph.p_filesz, head, got);
  }
  if (!go && (look == GoLook::Sections || (look == GoLook::DynamicSections && dynamic))) go = sections_say_go<E>(fd, eh);
  return go ? ProgramKind::Go : dynamic ? ProgramKind::Dynamic : ProgramKind::Static;
}

// Whether exec'ing a file of this mode and owner changes the caller's ids, which is
// when the kernel asks the loader for a secure exec (AT_SECURE) and the loader ignores
// LD_PRELOAD: the new effective ids differ from the real ones. Root running a
// setuid-root program (or anyone their own setuid program) changes nothing: the
// library reaches it like any other, so it is judged by what it is.
bool exec_changes_ids(const struct stat& st) {
  auto uid = static_cast<uid_t>(raw_syscall3(SYS_getuid, 0, 0, 0)), euid = static_cast<uid_t>(raw_syscall3(SYS_geteuid, 0, 0, 0));
  auto gid = static_cast<gid_t>(raw_syscall3(SYS_getgid, 0, 0, 0)), egid = static_cast<gid_t>(raw_syscall3(SYS_getegid, 0, 0, 0));
  uid_t new_euid = (st.st_mode & S_ISUID) ? st.st_uid : euid;
  gid_t new_egid = (st.st_mode & S_ISGID) ? st.st_gid : egid;
  return new_euid != uid || new_egid != gid;
}

void note_judged(const char* path, char* judged, size_t cap) {
  if (!judged || cap == 0) return;
  size_t n = std::strlen(path);
  if (n >= cap) n = cap - 1;
  std::memcpy(judged, path, n);
  judged[n] = '\0';
}

ProgramKind judge(const char* path, GoLook look, char* judged, size_t cap, ProgramLoader* loader) {
  char interp[kInterpMax];
  unsigned char head[kHead];
  for (int depth = 0;; ++depth) {
    note_judged(path, judged, cap);
    struct stat st;
    long fd = raw_syscall4(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC | O_NOCTTY, 0);
    if (fd < 0) {  // an unreadable program may still be setuid (mode 4711): the loader ignores LD_PRELOAD all the same
      bool setuid = raw_syscall4(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(path), reinterpret_cast<long>(&st),
                                 0) == 0 &&
                    S_ISREG(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID)) && exec_changes_ids(st);
      return setuid ? ProgramKind::Setuid : ProgramKind::Other;
    }
    ProgramKind kind = ProgramKind::Other;
    long got = 0;
    if (raw_syscall3(SYS_fstat, fd, reinterpret_cast<long>(&st), 0) == 0 && S_ISREG(st.st_mode)) {
      if ((st.st_mode & (S_ISUID | S_ISGID)) && exec_changes_ids(st)) kind = ProgramKind::Setuid;
      else got = pread_raw(static_cast<int>(fd), head, sizeof head - 1, 0);
    }
    if (got >= SELFMAG && std::memcmp(head, ELFMAG, SELFMAG) == 0) {
      size_t n = static_cast<size_t>(got);
      if (head[EI_CLASS] == ELFCLASS64) kind = judge_elf<Elf64>(static_cast<int>(fd), head, n, look, loader);
      else if (head[EI_CLASS] == ELFCLASS32) kind = judge_elf<Elf32>(static_cast<int>(fd), head, n, look, loader);
    } else if (got > 2 && head[0] == '#' && head[1] == '!' && depth < kMaxScriptDepth) {
      // The interpreter: the first word after "#!", a path (a bare name is not looked up).
      head[got] = '\0';
      char* b = reinterpret_cast<char*>(head) + 2;
      while (*b == ' ' || *b == '\t') ++b;
      char* e = b;
      while (*e && *e != ' ' && *e != '\t' && *e != '\n') ++e;
      size_t len = static_cast<size_t>(e - b);
      raw_syscall3(SYS_close, fd, 0, 0);
      if (len == 0 || len >= sizeof interp || !std::memchr(b, '/', len)) return ProgramKind::Other;
      std::memcpy(interp, b, len);
      interp[len] = '\0';
      path = interp;
      continue;
    }
    raw_syscall3(SYS_close, fd, 0, 0);
    return kind;
  }
}

}  // namespace

ProgramLibc program_libc(const char* interp, unsigned char elf_class, uint16_t machine) noexcept {
  if (!interp || !*interp) return ProgramLibc::None;
  const char* base = std::strrchr(interp, '/');
  base = base ? base + 1 : interp;
#if defined(__x86_64__)
  constexpr unsigned char kClass = ELFCLASS64;
  constexpr uint16_t kMachine = EM_X86_64;
  static constexpr char kGlibc[] = "ld-linux-x86-64.so.2", kMusl[] = "ld-musl-x86_64.so.1";
#elif defined(__aarch64__)
  constexpr unsigned char kClass = ELFCLASS64;
  constexpr uint16_t kMachine = EM_AARCH64;
  static constexpr char kGlibc[] = "ld-linux-aarch64.so.1", kMusl[] = "ld-musl-aarch64.so.1";
#else
#error "program_libc: the loaders of this architecture"
#endif
  if (elf_class != kClass || machine != kMachine) return ProgramLibc::Foreign;  // 32-bit, x32, another machine
  if (std::strcmp(base, kGlibc) == 0) return ProgramLibc::Glibc;
  if (std::strcmp(base, kMusl) == 0) return ProgramLibc::Musl;
  return ProgramLibc::Foreign;
}

ProgramKind program_kind(const char* path, GoLook look, char* judged, size_t judged_cap,
                         ProgramLoader* loader) noexcept {
  note_judged(path ? path : "", judged, judged_cap);
  if (loader) *loader = ProgramLoader{};
  if (!path || !*path) return ProgramKind::Other;
  int saved = errno;
  ProgramKind k = judge(path, look, judged, judged_cap, loader);
  errno = saved;
  return k;
}

}  // namespace bonsai
