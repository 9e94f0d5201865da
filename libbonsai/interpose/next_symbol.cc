// SPDX-License-Identifier: MIT
// RTLD_NEXT lookups by hand (see next_symbol.h). The search follows glibc's rules for
// dlsym without a version: the first object after ours, in load order, that defines
// the name globally with its default (non-hidden) version; weak definitions count.
#include "interpose/next_symbol.h"

#include <elf.h>
#include <link.h>
#include <sys/auxv.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "sys/self_map.h"
#include "sys/startup.h"


namespace bonsai::real {
namespace {

// One searchable object: its load bias and the tables of its dynamic section.
struct NextObject {
  uintptr_t bias;
  const ElfW(Sym)* symtab;
  const char* strtab;
  size_t strsz;
  const ElfW(Half)* versym;  // may be null (no symbol versions)
  uint32_t nbuckets, symoffset, bloom_words, bloom_shift;
  const ElfW(Addr)* bloom;
  const uint32_t* buckets;
  const uint32_t* chain;
};

constexpr int kMaxNext = 16;  // libc and its loader, preloads behind ours; names not
                              // found in the first 16 objects are left to dlsym
BONSAI_STARTUP_DATA constinit NextObject g_next[kMaxNext]{};
BONSAI_STARTUP_DATA constinit int g_next_n = 0;
BONSAI_STARTUP_DATA constinit std::atomic<bool> g_ready{false};

// glibc relocates d_ptr values in place when it loads an object; one it has not
// (a read-only dynamic section) is still an offset from the bias.
uintptr_t dyn_addr(ElfW(Addr) value, uintptr_t bias) noexcept {
  return value < bias ? value + bias : value;
}

BONSAI_STARTUP bool note_object(const link_map* m, NextObject& o) noexcept {
  if (!m->l_ld) return false;
  uintptr_t bias = m->l_addr;
  ElfW(Addr) gnu_hash = 0, symtab = 0, strtab = 0, strsz = 0, versym = 0;
  int n = 0;
  for (const ElfW(Dyn)* d = m->l_ld; d->d_tag != DT_NULL; ++d) {
    if (++n > 512) return false;  // no dynamic section is this long
    switch (d->d_tag) {
      case DT_GNU_HASH: gnu_hash = d->d_un.d_ptr; break;
      case DT_SYMTAB: symtab = d->d_un.d_ptr; break;
      case DT_STRTAB: strtab = d->d_un.d_ptr; break;
      case DT_STRSZ: strsz = d->d_un.d_val; break;
      case DT_VERSYM: versym = d->d_un.d_ptr; break;
      default: break;
    }
  }
  if (!gnu_hash || !symtab || !strtab || !strsz) return false;  // dlsym knows DT_HASH; we do not
  const auto* h = reinterpret_cast<const uint32_t*>(dyn_addr(gnu_hash, bias));
  o.bias = bias;
  o.symtab = reinterpret_cast<const ElfW(Sym)*>(dyn_addr(symtab, bias));
  o.strtab = reinterpret_cast<const char*>(dyn_addr(strtab, bias));
  o.strsz = strsz;
  o.versym = versym ? reinterpret_cast<const ElfW(Half)*>(dyn_addr(versym, bias)) : nullptr;
  o.nbuckets = h[0];
  o.symoffset = h[1];
  o.bloom_words = h[2];
  o.bloom_shift = h[3];
  if (o.nbuckets == 0 || o.bloom_words == 0 || (o.bloom_words & (o.bloom_words - 1)) != 0) return false;
  o.bloom = reinterpret_cast<const ElfW(Addr)*>(h + 4);
  o.buckets = reinterpret_cast<const uint32_t*>(o.bloom + o.bloom_words);
  o.chain = o.buckets + o.nbuckets;
  return true;
}

uint32_t gnu_hash_of(const char* s) noexcept {
  uint32_t h = 5381;
  for (auto c = static_cast<unsigned char>(*s); c; c = static_cast<unsigned char>(*++s)) h = h * 33 + c;
  return h;
}

enum class Found { No, Yes, Defer };

// Looks `name` up in one object; Defer: it is there but not ours to resolve (an IFUNC,
// whose resolver the loader runs), so the caller asks dlsym.
Found lookup_in(const NextObject& o, const char* name, uint32_t hash, void*& out) noexcept {
  constexpr unsigned kBits = sizeof(ElfW(Addr)) * 8;
  ElfW(Addr) word = o.bloom[(hash / kBits) & (o.bloom_words - 1)];
  ElfW(Addr) mask = (ElfW(Addr){1} << (hash % kBits)) | (ElfW(Addr){1} << ((hash >> o.bloom_shift) % kBits));
  if ((word & mask) != mask) return Found::No;
  uint32_t ix = o.buckets[hash % o.nbuckets];
  if (ix < o.symoffset) return Found::No;
  for (;; ++ix) {
    uint32_t h2 = o.chain[ix - o.symoffset];
    const ElfW(Sym)& s = o.symtab[ix];
    if ((h2 | 1) == (hash | 1) && s.st_name < o.strsz && std::strcmp(name, o.strtab + s.st_name) == 0 &&
        s.st_shndx != SHN_UNDEF && (ELF64_ST_BIND(s.st_info) == STB_GLOBAL || ELF64_ST_BIND(s.st_info) == STB_WEAK) &&
        !(o.versym && (o.versym[ix] & 0x8000))) {  // a hidden (non-default) version
      unsigned type = ELF64_ST_TYPE(s.st_info);
      if (type == STT_GNU_IFUNC || type == STT_TLS) return Found::Defer;
      if (type != STT_FUNC && type != STT_OBJECT && type != STT_NOTYPE) return Found::No;
      out = reinterpret_cast<void*>(o.bias + s.st_value);
      return Found::Yes;
    }
    if (h2 & 1) return Found::No;  // the end of this bucket's chain
  }
}

}  // namespace

BONSAI_STARTUP bool next_objects_note() noexcept {
  const link_map* self = self_link_map();
  if (!self) return false;  // not loaded the usual way (dlmopen, an audit namespace)
  // The vDSO sits in the list but not in the search order (its clock_gettime is the
  // kernel's, not glibc's); the loader puts it before the preloads, skip it anyway.
  uintptr_t vdso = getauxval(AT_SYSINFO_EHDR);
  // Noted up to the first object that cannot be searched here: a name found among
  // them is dlsym's answer (the first definition in order); one not found is left to
  // dlsym (next_symbol answers nullptr), so stopping early is never wrong.
  int n = 0;
  for (const link_map* m = self->l_next; m && n < kMaxNext; m = m->l_next) {
    if (vdso && m->l_addr == vdso) continue;
    if (!note_object(m, g_next[n])) break;
    ++n;
  }
  g_next_n = n;
  g_ready.store(true, std::memory_order_release);
  return true;
}

bool next_objects_ready() noexcept { return g_ready.load(std::memory_order_acquire); }

void* next_symbol(const char* name) noexcept {
  if (!g_ready.load(std::memory_order_acquire)) return nullptr;
  uint32_t hash = gnu_hash_of(name);
  for (int k = 0; k < g_next_n; ++k) {
    void* p = nullptr;
    switch (lookup_in(g_next[k], name, hash, p)) {
      case Found::Yes: return p;
      case Found::Defer: return nullptr;
      case Found::No: break;
    }
  }
  return nullptr;
}

}  // namespace bonsai::real
