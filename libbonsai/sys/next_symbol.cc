// SPDX-License-Identifier: MIT
// RTLD_NEXT lookups by hand (see next_symbol.h). The search follows the loaders' rules
// for dlsym without a version: the first object after ours, in load order, that defines
// the name globally with its default (non-hidden) version; weak definitions count.
#include "sys/next_symbol.h"

#include <elf.h>
#include <link.h>
#include <sys/auxv.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "sys/self_map.h"
#include "sys/startup.h"


namespace bonsai {
namespace {

// One searchable object: its load bias and the tables of its dynamic section. GNU hash
// when it has one (glibc's and musl's objects nearly always do), else the SysV table.
struct NextObject {
  uintptr_t bias;
  const ElfW(Sym)* symtab;
  const char* strtab;
  size_t strsz;
  const ElfW(Half)* versym;  // may be null (no symbol versions: musl)
  const uint32_t* sysv;      // DT_HASH: nbucket, nchain, buckets, chains (used without GNU hash)
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
// (a read-only dynamic section, musl) is still an offset from the bias.
uintptr_t dyn_addr(ElfW(Addr) value, uintptr_t bias) noexcept {
  return value < bias ? value + bias : value;
}

BONSAI_STARTUP bool note_object(const link_map* m, NextObject& o) noexcept {
  if (!m->l_ld) return false;
  uintptr_t bias = m->l_addr;
  ElfW(Addr) gnu_hash = 0, sysv_hash = 0, symtab = 0, strtab = 0, strsz = 0, versym = 0;
  int n = 0;
  for (const ElfW(Dyn)* d = m->l_ld; d->d_tag != DT_NULL; ++d) {
    if (++n > 512) return false;  // no dynamic section is this long
    switch (d->d_tag) {
      case DT_GNU_HASH: gnu_hash = d->d_un.d_ptr; break;
      case DT_HASH: sysv_hash = d->d_un.d_ptr; break;
      case DT_SYMTAB: symtab = d->d_un.d_ptr; break;
      case DT_STRTAB: strtab = d->d_un.d_ptr; break;
      case DT_STRSZ: strsz = d->d_un.d_val; break;
      case DT_VERSYM: versym = d->d_un.d_ptr; break;
      default: break;
    }
  }
  if ((!gnu_hash && !sysv_hash) || !symtab || !strtab || !strsz) return false;
  o.bias = bias;
  o.symtab = reinterpret_cast<const ElfW(Sym)*>(dyn_addr(symtab, bias));
  o.strtab = reinterpret_cast<const char*>(dyn_addr(strtab, bias));
  o.strsz = strsz;
  o.versym = versym ? reinterpret_cast<const ElfW(Half)*>(dyn_addr(versym, bias)) : nullptr;
  o.sysv = nullptr;
  if (!gnu_hash) {
    o.sysv = reinterpret_cast<const uint32_t*>(dyn_addr(sysv_hash, bias));
    return o.sysv[0] != 0;
  }
  const auto* h = reinterpret_cast<const uint32_t*>(dyn_addr(gnu_hash, bias));
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

uint32_t sysv_hash_of(const char* s) noexcept {
  uint32_t h = 0;
  for (auto c = static_cast<unsigned char>(*s); c; c = static_cast<unsigned char>(*++s)) {
    h = (h << 4) + c;
    uint32_t g = h & 0xf0000000u;
    if (g) h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

enum class Found { No, Yes, Defer };

// Symbol `ix` of `o` if it is `name`'s global default definition.
Found match(const NextObject& o, uint32_t ix, const char* name, void*& out) noexcept {
  const ElfW(Sym)& s = o.symtab[ix];
  if (s.st_name >= o.strsz || std::strcmp(name, o.strtab + s.st_name) != 0) return Found::No;
  if (s.st_shndx == SHN_UNDEF || (ELF64_ST_BIND(s.st_info) != STB_GLOBAL && ELF64_ST_BIND(s.st_info) != STB_WEAK))
    return Found::No;
  if (o.versym && (o.versym[ix] & 0x8000)) return Found::No;  // a hidden (non-default) version
  unsigned type = ELF64_ST_TYPE(s.st_info);
  if (type == STT_GNU_IFUNC || type == STT_TLS) return Found::Defer;
  if (type != STT_FUNC && type != STT_OBJECT && type != STT_NOTYPE) return Found::No;
  out = reinterpret_cast<void*>(o.bias + s.st_value);
  return Found::Yes;
}

// Looks `name` up in one object; Defer: it is there but not ours to resolve (an IFUNC,
// whose resolver the loader runs), so the caller asks dlsym.
Found lookup_in(const NextObject& o, const char* name, uint32_t hash, uint32_t shash, void*& out) noexcept {
  if (o.sysv) {
    uint32_t nbucket = o.sysv[0], nchain = o.sysv[1];
    const uint32_t* chain = o.sysv + 2 + nbucket;
    int steps = 0;
    for (uint32_t ix = o.sysv[2 + shash % nbucket]; ix != STN_UNDEF && ix < nchain; ix = chain[ix]) {
      if (++steps > 65536) return Found::No;  // a corrupt chain
      Found f = match(o, ix, name, out);
      if (f != Found::No) return f;
    }
    return Found::No;
  }
  constexpr unsigned kBits = sizeof(ElfW(Addr)) * 8;
  ElfW(Addr) word = o.bloom[(hash / kBits) & (o.bloom_words - 1)];
  ElfW(Addr) mask = (ElfW(Addr){1} << (hash % kBits)) | (ElfW(Addr){1} << ((hash >> o.bloom_shift) % kBits));
  if ((word & mask) != mask) return Found::No;
  uint32_t ix = o.buckets[hash % o.nbuckets];
  if (ix < o.symoffset) return Found::No;
  for (;; ++ix) {
    uint32_t h2 = o.chain[ix - o.symoffset];
    if ((h2 | 1) == (hash | 1)) {
      Found f = match(o, ix, name, out);
      if (f != Found::No) return f;
    }
    if (h2 & 1) return Found::No;  // the end of this bucket's chain
  }
}

// The vDSO sits in the list but not in the search order (its clock_gettime is the
// kernel's, not libc's); glibc puts it before the preloads, musl at the end.
bool is_vdso(const link_map* m, uintptr_t vdso) noexcept { return vdso && m->l_addr == vdso; }

BONSAI_STARTUP uintptr_t vdso_base() noexcept {
  int saved = errno;  // glibc's getauxval says ENOENT when there is none
  uintptr_t v = getauxval(AT_SYSINFO_EHDR);
  errno = saved;
  return v;
}

// Walks the objects from `m` on, noting each on the fly: the lookup before the
// constructor noted them, and for default_symbol. Stops as next_objects_note does.
void* walk_lookup(const link_map* m, const link_map* skip, const char* name) noexcept {
  uint32_t hash = gnu_hash_of(name), shash = sysv_hash_of(name);
  uintptr_t vdso = vdso_base();
  int n = 0;
  for (; m && n < 64; m = m->l_next, ++n) {
    if (m == skip || is_vdso(m, vdso)) continue;
    NextObject o{};
    if (!note_object(m, o)) return nullptr;
    void* p = nullptr;
    switch (lookup_in(o, name, hash, shash, p)) {
      case Found::Yes: return p;
      case Found::Defer: return nullptr;
      case Found::No: break;
    }
  }
  return nullptr;
}

}  // namespace

BONSAI_STARTUP bool next_objects_note() noexcept {
  const link_map* self = self_link_map();
  if (!self) return false;  // not loaded the usual way (dlmopen, an audit namespace)
  // Noted up to the first object that cannot be searched here: a name found among
  // them is dlsym's answer (the first definition in order); one not found is left to
  // dlsym (next_symbol answers nullptr), so stopping early is never wrong.
  uintptr_t vdso = vdso_base();
  int n = 0;
  for (const link_map* m = self->l_next; m && n < kMaxNext; m = m->l_next) {
    if (is_vdso(m, vdso)) continue;
    if (!note_object(m, g_next[n])) break;
    ++n;
  }
  g_next_n = n;
  g_ready.store(true, std::memory_order_release);
  return true;
}

bool next_objects_ready() noexcept { return g_ready.load(std::memory_order_acquire); }

void* next_symbol(const char* name) noexcept {
  if (!g_ready.load(std::memory_order_acquire)) {  // before the constructor: walk the list
    const link_map* self = self_link_map();
    return self ? walk_lookup(self->l_next, nullptr, name) : nullptr;
  }
  uint32_t hash = gnu_hash_of(name), shash = 0;
  for (int k = 0; k < g_next_n; ++k) {
    void* p = nullptr;
    if (g_next[k].sysv && !shash) shash = sysv_hash_of(name);
    switch (lookup_in(g_next[k], name, hash, shash, p)) {
      case Found::Yes: return p;
      case Found::Defer: return nullptr;
      case Found::No: break;
    }
  }
  return nullptr;
}

void* default_symbol(const char* name) noexcept {
  const link_map* head = loaded_objects();
  return head ? walk_lookup(head, self_link_map(), name) : nullptr;
}

void* libc_symbol(const char* name) noexcept {
  void* p = next_symbol(name);
  return p ? p : default_symbol(name);
}

}  // namespace bonsai
