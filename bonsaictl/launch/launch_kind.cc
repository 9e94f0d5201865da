// SPDX-License-Identifier: MIT
// Telling dynamic, static, Go and setuid programs apart (see launch_kind.h): the ELF
// program headers (PT_INTERP: dynamic) and section names (.go.buildinfo,
// .note.go.buildid: Go).
#include "launch/launch_kind.h"

#include <cstring>
#include <elf.h>
#include <fmt/core.h>
#include <fstream>
#include <sys/stat.h>
#include <vector>

namespace bonsai::ctl {
namespace {

struct ElfFacts {
  bool ok = false, dynamic = false, go = false;
};

template <class Ehdr, class Phdr, class Shdr>
ElfFacts elf_facts(std::ifstream& f) {
  ElfFacts out;
  Ehdr eh;
  f.seekg(0);
  if (!f.read(reinterpret_cast<char*>(&eh), sizeof eh)) return out;
  for (unsigned i = 0; i < eh.e_phnum && i < 256; ++i) {
    Phdr ph;
    f.seekg(static_cast<std::streamoff>(eh.e_phoff + i * eh.e_phentsize));
    if (!f.read(reinterpret_cast<char*>(&ph), sizeof ph)) return out;
    if (ph.p_type == PT_INTERP) out.dynamic = true;
  }
  out.ok = true;
  // Section names: a Go toolchain always writes its build id and build info.
  if (eh.e_shoff == 0 || eh.e_shstrndx >= eh.e_shnum || eh.e_shnum > 4096) return out;
  Shdr names;
  f.seekg(static_cast<std::streamoff>(eh.e_shoff + eh.e_shstrndx * eh.e_shentsize));
  if (!f.read(reinterpret_cast<char*>(&names), sizeof names) || names.sh_size > (1u << 20)) return out;
  std::vector<char> strtab(names.sh_size + 1, '\0');
  f.seekg(static_cast<std::streamoff>(names.sh_offset));
  if (!f.read(strtab.data(), static_cast<std::streamsize>(names.sh_size))) return out;
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    Shdr sh;
    f.seekg(static_cast<std::streamoff>(eh.e_shoff + i * eh.e_shentsize));
    if (!f.read(reinterpret_cast<char*>(&sh), sizeof sh)) break;
    if (sh.sh_name >= names.sh_size) continue;
    const char* n = strtab.data() + sh.sh_name;
    if (!std::strcmp(n, ".go.buildinfo") || !std::strcmp(n, ".note.go.buildid")) out.go = true;
  }
  return out;
}

LaunchInfo inspect(const std::string& path, int depth) {
  LaunchInfo info;
  info.program = path;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return info;
  if (st.st_mode & (S_ISUID | S_ISGID)) {
    info.kind = LaunchKind::Setuid;
    info.what = fmt::format("is set{}id", (st.st_mode & S_ISUID) ? "u" : "g");
    return info;
  }
  std::ifstream f(path, std::ios::binary);
  char head[EI_NIDENT] = {};
  if (!f.read(head, sizeof head)) return info;
  if (head[0] == '#' && head[1] == '!') {
    f.seekg(2);
    std::string line;
    std::getline(f, line);
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || depth > 4) return info;
    std::string interp = line.substr(b, line.find_first_of(" \t", b) - b);
    if (interp.find('/') == std::string::npos) return info;
    return inspect(interp, depth + 1);
  }
  if (std::string_view(head, 4) != std::string_view(ELFMAG, SELFMAG)) return info;
  ElfFacts e = head[EI_CLASS] == ELFCLASS64 ? elf_facts<Elf64_Ehdr, Elf64_Phdr, Elf64_Shdr>(f)
                                            : elf_facts<Elf32_Ehdr, Elf32_Phdr, Elf32_Shdr>(f);
  if (!e.ok) return info;
  if (e.go) {
    info.kind = LaunchKind::Go;
    info.what = "is a Go program (it makes its own system calls)";
  } else if (!e.dynamic) {
    info.kind = LaunchKind::Static;
    info.what = "is statically linked";
  } else {
    info.kind = LaunchKind::Dynamic;
  }
  return info;
}

}  // namespace

LaunchInfo launch_inspect(const std::string& path) { return inspect(path, 0); }

std::string preload_warning(const std::string& path) {
  LaunchInfo i = launch_inspect(path);
  if (i.kind == LaunchKind::Dynamic || i.kind == LaunchKind::Other) return "";
  std::string subject = i.program == path ? path : fmt::format("{} runs {}, which", path, i.program);
  if (i.kind == LaunchKind::Setuid)
    return fmt::format("{} {}: the loader ignores LD_PRELOAD for it, so NO LIMITS WILL APPLY", subject, i.what);
  return fmt::format("{} {}: LD_PRELOAD cannot reach it, so NO LIMITS WILL APPLY", subject, i.what);
}

}  // namespace bonsai::ctl
