// SPDX-License-Identifier: MIT
// abi/program_kind.h, the one judgement of a program (dynamic, static, Go, setuid,
// other) for bonsaictl run and the library's exec wrappers: made-up ELF files of both
// classes (interpreter, Go's build-id note in and out of the first read, Go's section
// names, damaged headers), scripts, setuid files, and the system's own programs.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "launch/launch_kind.h"
#include "abi/program_kind.h"
#include "runtime/exec_kind.h"

using namespace bonsai;

namespace {

struct ElfSpec {
  bool interp = false;                 // a PT_INTERP
  bool go_note = false;                // a PT_NOTE with Go's build id
  size_t note_at = 0;                  // where the notes go (0: right after the headers)
  std::vector<std::string> sections;   // section names (with .shstrtab), none if empty
  int phnum_override = -1;             // a damaged header
};

template <class Ehdr, class Phdr, class Shdr>
std::string make_elf(unsigned char cls, const ElfSpec& s) {
  std::string note;
  if (s.go_note) {
    Elf64_Nhdr gnu{4, 4, 3};  // a GNU note first, as a cgo program linked externally has
    note.append(reinterpret_cast<const char*>(&gnu), sizeof gnu).append("GNU\0", 4).append(4, 'x');
    Elf64_Nhdr nh{4, 8, 4};
    note.append(reinterpret_cast<const char*>(&nh), sizeof nh).append("Go\0\0", 4).append(8, 'b');
  }
  const std::string interp = "/lib64/ld-linux-x86-64.so.2";
  std::vector<Phdr> phs(1);
  phs[0].p_type = PT_LOAD;
  size_t ph_end = sizeof(Ehdr) + (1 + s.interp + s.go_note) * sizeof(Phdr);
  size_t interp_at = ph_end;
  size_t note_at = s.note_at ? s.note_at : interp_at + interp.size() + 1;
  if (s.interp) {
    Phdr p{};
    p.p_type = PT_INTERP;
    p.p_offset = interp_at;
    p.p_filesz = interp.size() + 1;
    phs.push_back(p);
  }
  if (s.go_note) {
    Phdr p{};
    p.p_type = PT_NOTE;
    p.p_offset = note_at;
    p.p_filesz = note.size();
    phs.push_back(p);
  }
  std::string file(note_at + note.size(), '\0');
  file.replace(interp_at, interp.size(), interp);
  file.replace(note_at, note.size(), note);
  Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = cls;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = cls == ELFCLASS64 ? EM_X86_64 : EM_386;
  eh.e_version = EV_CURRENT;
  eh.e_ehsize = sizeof(Ehdr);
  eh.e_phoff = sizeof(Ehdr);
  eh.e_phentsize = sizeof(Phdr);
  eh.e_phnum = static_cast<uint16_t>(s.phnum_override >= 0 ? s.phnum_override : static_cast<int>(phs.size()));
  if (!s.sections.empty()) {
    std::string strtab(1, '\0');
    std::vector<Shdr> shs(1);
    for (const std::string& n : s.sections) {
      Shdr sh{};
      sh.sh_name = static_cast<uint32_t>(strtab.size());
      sh.sh_type = n == ".shstrtab" ? SHT_STRTAB : SHT_PROGBITS;
      strtab += n + '\0';
      shs.push_back(sh);
    }
    size_t strtab_at = file.size();
    file += strtab;
    file.resize((file.size() + 7) & ~size_t{7});
    for (size_t i = 1; i < shs.size(); ++i) {
      if (s.sections[i - 1] != ".shstrtab") continue;
      shs[i].sh_offset = strtab_at;
      shs[i].sh_size = strtab.size();
      eh.e_shstrndx = static_cast<uint16_t>(i);
    }
    eh.e_shoff = file.size();
    eh.e_shentsize = sizeof(Shdr);
    eh.e_shnum = static_cast<uint16_t>(shs.size());
    file.append(reinterpret_cast<const char*>(shs.data()), shs.size() * sizeof(Shdr));
  }
  std::memcpy(file.data(), &eh, sizeof eh);
  std::memcpy(file.data() + sizeof eh, phs.data(), phs.size() * sizeof(Phdr));
  return file;
}

std::string elf64(const ElfSpec& s) { return make_elf<Elf64_Ehdr, Elf64_Phdr, Elf64_Shdr>(ELFCLASS64, s); }
std::string elf32(const ElfSpec& s) { return make_elf<Elf32_Ehdr, Elf32_Phdr, Elf32_Shdr>(ELFCLASS32, s); }

struct TempFile {
  std::string path;
  TempFile(const std::string& text, mode_t mode) {
    char name[] = "/tmp/bonsai-program-kind-XXXXXX";
    int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    close(fd);
    chmod(name, mode);
    path = name;
  }
  ~TempFile() { unlink(path.c_str()); }
};

ProgramKind notes(const std::string& p) { return program_kind(p.c_str(), GoLook::Notes); }
ProgramKind sections(const std::string& p) { return program_kind(p.c_str(), GoLook::Sections); }

}  // namespace

TEST_CASE("program_kind: made-up ELF files of both classes", "[program_kind]") {
  for (auto make : {elf64, elf32}) {
    TempFile stat_elf(make({}), 0755);
    CHECK(notes(stat_elf.path) == ProgramKind::Static);
    CHECK(sections(stat_elf.path) == ProgramKind::Static);
    TempFile dyn(make({.interp = true}), 0755);
    CHECK(notes(dyn.path) == ProgramKind::Dynamic);
    TempFile go(make({.interp = true, .go_note = true}), 0755);  // cgo: dynamic, Go all the same
    CHECK(notes(go.path) == ProgramKind::Go);
    TempFile go_far(make({.go_note = true, .note_at = 8192}), 0755);  // the notes past the first read
    CHECK(notes(go_far.path) == ProgramKind::Go);
    // Linked without a build id: no note, only the section names say Go.
    TempFile go_sections(make({.interp = true, .sections = {".text", ".go.buildinfo", ".shstrtab"}}), 0755);
    CHECK(notes(go_sections.path) == ProgramKind::Dynamic);
    CHECK(sections(go_sections.path) == ProgramKind::Go);
    TempFile go_id(make({.sections = {".shstrtab", ".note.go.buildid"}}), 0755);
    CHECK(sections(go_id.path) == ProgramKind::Go);
    // The library's look: a dynamic program's sections, not a static one's (supervised
    // either way: static, Go or not).
    CHECK(program_kind(go_sections.path.c_str(), GoLook::DynamicSections) == ProgramKind::Go);
    CHECK(program_kind(go_id.path.c_str(), GoLook::DynamicSections) == ProgramKind::Static);
    TempFile plain_sections(make({.interp = true, .sections = {".text", ".go.buildinfox", ".shstrtab", ".go"}}), 0755);
    CHECK(sections(plain_sections.path) == ProgramKind::Dynamic);
    TempFile no_phdrs(make({.phnum_override = 0}), 0755);
    CHECK(notes(no_phdrs.path) == ProgramKind::Other);
    TempFile too_many(make({.phnum_override = 65}), 0755);
    CHECK(notes(too_many.path) == ProgramKind::Other);
    TempFile cut(make({.interp = true}).substr(0, 40), 0755);  // the header cut short
    CHECK(notes(cut.path) == ProgramKind::Other);
    // Setuid: only when its exec changes the caller's ids (the loader then drops
    // LD_PRELOAD); a setuid program of the caller's own is judged by what it is.
    TempFile setuid(make({.interp = true}), 04755);
    CHECK(notes(setuid.path) == ProgramKind::Dynamic);
    if (geteuid() == 0 && chown(setuid.path.c_str(), 65534, static_cast<gid_t>(-1)) == 0 &&
        chmod(setuid.path.c_str(), 04755) == 0)  // chown clears the bit
      CHECK(notes(setuid.path) == ProgramKind::Setuid);
  }
  std::string bad_class = elf64({});
  bad_class[EI_CLASS] = 7;
  TempFile bad(bad_class, 0755);
  CHECK(notes(bad.path) == ProgramKind::Other);
}

TEST_CASE("program_kind: scripts are judged by their interpreter, 4 deep at most", "[program_kind]") {
  TempFile go(elf64({.go_note = true}), 0755);
  TempFile s1("#! " + go.path + " -x\n", 0755);
  char judged[256];
  CHECK(program_kind(s1.path.c_str(), GoLook::Notes, judged, sizeof judged) == ProgramKind::Go);
  CHECK(std::string(judged) == go.path);
  TempFile s2("#!" + s1.path + "\n", 0755);
  TempFile s3("#!" + s2.path + "\n", 0755);
  TempFile s4("#!\t" + s3.path + "\n", 0755);
  CHECK(notes(s4.path) == ProgramKind::Go);  // 4 scripts, then the program
  TempFile s5("#!" + s4.path + "\n", 0755);
  CHECK(notes(s5.path) == ProgramKind::Other);  // the kernel refuses a fifth (ELOOP)
  TempFile bare("#!sh\n", 0755);  // a bare name is not looked up
  CHECK(notes(bare.path) == ProgramKind::Other);
  TempFile empty("#!\n", 0755);
  CHECK(notes(empty.path) == ProgramKind::Other);
  TempFile missing("#!/no/such/interpreter\n", 0755);
  CHECK(program_kind(missing.path.c_str(), GoLook::Notes, judged, sizeof judged) == ProgramKind::Other);
  CHECK(std::string(judged) == "/no/such/interpreter");
  TempFile long_interp("#!/" + std::string(300, 'a') + "\n", 0755);  // longer than the kernel reads
  CHECK(notes(long_interp.path) == ProgramKind::Other);
  char small[8];
  CHECK(program_kind(s1.path.c_str(), GoLook::Notes, small, sizeof small) == ProgramKind::Go);
  CHECK(std::strlen(small) == 7);  // cut, terminated
}

TEST_CASE("program_kind: files that are no program, and errno kept", "[program_kind]") {
  CHECK(program_kind(nullptr, GoLook::Notes) == ProgramKind::Other);
  CHECK(program_kind("", GoLook::Notes) == ProgramKind::Other);
  CHECK(notes("/tmp") == ProgramKind::Other);
  CHECK(notes("/dev/null") == ProgramKind::Other);
  errno = 1234;
  CHECK(notes("/no/such/file") == ProgramKind::Other);
  CHECK(errno == 1234);
  TempFile text("not a program\n", 0755);
  CHECK(notes(text.path) == ProgramKind::Other);
  CHECK(notes("/proc/self/exe") == ProgramKind::Dynamic);  // this test program
}

// (Before bonsaictl and the library shared this judgement, both of theirs gave these
// programs the same answers as this one: commit c0efd05.)
TEST_CASE("program_kind: the system's programs, by note and by section names", "[program_kind]") {
  size_t judged = 0, go = 0;
  for (const char* dir : {"/bin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/lib/go/bin"}) {
    DIR* d = opendir(dir);
    if (!d) continue;
    while (dirent* ent = readdir(d)) {
      std::string p = std::string(dir) + "/" + ent->d_name;
      struct stat st;
      if (ent->d_name[0] == '.' || stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      INFO(p);
      ++judged;
      ProgramKind n = notes(p), s = sections(p);
      // The section names find more Go programs (those without a build id), nothing else.
      if (s == ProgramKind::Go && n != ProgramKind::Go) CHECK((n == ProgramKind::Dynamic || n == ProgramKind::Static));
      else CHECK(n == s);
      go += n == ProgramKind::Go;
      // The library's and bonsaictl's names for it: both read the section names (a
      // dynamic Go program without a build id has no note); the library not a static
      // program's (supervised alike, Go's or not).
      CHECK(exec_kind_of(p.c_str()) == (s == ProgramKind::Go && n == ProgramKind::Static ? ProgramKind::Static : s));
      CHECK(ctl::launch_inspect(p).kind == s);
    }
    closedir(d);
  }
  WARN("programs judged: " << judged << " (Go: " << go << ")");
  CHECK(judged > 100);
  CHECK(notes("/bin/sh") == ProgramKind::Dynamic);
  if (access("/usr/bin/gofmt", X_OK) == 0) CHECK(notes("/usr/bin/gofmt") == ProgramKind::Go);
}

// Which build of the library a program's loader takes (issue #48, docs/reference/libc.md).
TEST_CASE("program_libc: glibc's and musl's loaders, and every other", "[program_kind][libc]") {
  CHECK(program_libc("/lib64/ld-linux-x86-64.so.2", ELFCLASS64, EM_X86_64) == ProgramLibc::Glibc);
  CHECK(program_libc("/nix/store/abc-glibc-2.37/lib/ld-linux-x86-64.so.2", ELFCLASS64, EM_X86_64) == ProgramLibc::Glibc);
  CHECK(program_libc("/lib/ld-musl-x86_64.so.1", ELFCLASS64, EM_X86_64) == ProgramLibc::Musl);
  CHECK(program_libc("ld-musl-x86_64.so.1", ELFCLASS64, EM_X86_64) == ProgramLibc::Musl);
  CHECK(program_libc("/lib/ld-linux.so.2", ELFCLASS32, EM_386) == ProgramLibc::Foreign);             // i386
  CHECK(program_libc("/lib/ld-linux-x86-64.so.2", ELFCLASS32, EM_X86_64) == ProgramLibc::Foreign);   // x32's class
  CHECK(program_libc("/libx32/ld-linux-x32.so.2", ELFCLASS32, EM_X86_64) == ProgramLibc::Foreign);
  CHECK(program_libc("/lib/ld-musl-i386.so.1", ELFCLASS32, EM_386) == ProgramLibc::Foreign);
  CHECK(program_libc("/lib/ld64-uClibc.so.0", ELFCLASS64, EM_X86_64) == ProgramLibc::Foreign);
  CHECK(program_libc("/system/bin/linker64", ELFCLASS64, EM_X86_64) == ProgramLibc::Foreign);
  CHECK(program_libc("/lib/ld-linux-x86-64.so.2x", ELFCLASS64, EM_X86_64) == ProgramLibc::Foreign);
  CHECK(program_libc("", ELFCLASS64, EM_X86_64) == ProgramLibc::None);
  CHECK(program_libc(nullptr, ELFCLASS64, EM_X86_64) == ProgramLibc::None);
}

TEST_CASE("program_kind: a dynamic program's loader is read from its PT_INTERP", "[program_kind][libc]") {
  ProgramLoader l;
  REQUIRE(program_kind("/bin/true", GoLook::Notes, nullptr, 0, &l) == ProgramKind::Dynamic);
  CHECK(l.libc == ProgramLibc::Glibc);  // the machine's own programs: glibc's (Debian)
  CHECK(std::string(l.interp).find("ld-linux-x86-64.so.2") != std::string::npos);
  for (auto make : {elf64, elf32}) {  // glibc's loader named by an x86_64 program, and by an i386 one
    TempFile dyn(make({.interp = true}), 0755);
    ProgramLoader d;
    CHECK(program_kind(dyn.path.c_str(), GoLook::Notes, nullptr, 0, &d) == ProgramKind::Dynamic);
    CHECK(d.libc == (make == elf64 ? ProgramLibc::Glibc : ProgramLibc::Foreign));
    CHECK(std::string(d.interp) == "/lib64/ld-linux-x86-64.so.2");
    TempFile stat_elf(make({}), 0755);
    ProgramLoader s;
    CHECK(program_kind(stat_elf.path.c_str(), GoLook::Notes, nullptr, 0, &s) == ProgramKind::Static);
    CHECK(s.libc == ProgramLibc::None);
    CHECK(s.interp[0] == '\0');
  }
}
