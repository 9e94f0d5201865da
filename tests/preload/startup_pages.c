// SPDX-License-Identifier: MIT
// Which pages of libbonsai.so a process start has touched (issue #34): run under the
// library, at main() it reads /proc/self/maps and /proc/self/pagemap (the present bit,
// readable without privileges) through raw system calls only, so that nothing of the
// library beyond its constructor has run. Each first touch of a file page costs a page
// fault that maps up to 16 pages around it (fault-around: a 64 KiB window of addresses,
// so where a window ends depends on where the library was loaded), each written page of
// .bss a fault of its own: a few microseconds each on a VM, against ~0.7 ms for a whole
// start of /bin/true. Set-up code sits right behind the headers (sys/startup.h), so a
// start should touch nothing of the code mapping past its first 128 KiB. Prints one line:
//   far_windows=N far_offsets=0x...,... bss_pages=N bss_offsets=0x...,...
// far_windows: 64 KiB windows (of file offsets) of the executable mapping beyond the
// first 128 KiB with a present page; bss_pages: written pages of the library's .bss
// (offsets: addresses in the library, for `nm -n`).
#define _GNU_SOURCE
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

static long sys3(long nr, long a, long b, long c) {
  long r;
  __asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return r;
}
static long sys4(long nr, long a, long b, long c, long d) {
  long r;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return r;
}

static char maps[1 << 16];

static unsigned long hex(const char** p) {
  unsigned long v = 0;
  for (;; ++*p) {
    char c = **p;
    if (c >= '0' && c <= '9') v = v * 16 + (unsigned long)(c - '0');
    else if (c >= 'a' && c <= 'f') v = v * 16 + (unsigned long)(c - 'a' + 10);
    else return v;
  }
}

// End of the library's image (its last PT_LOAD's memory size), from its own headers.
static unsigned long image_end(unsigned long base) {
  const Elf64_Ehdr* eh = (const Elf64_Ehdr*)base;
  const Elf64_Phdr* ph = (const Elf64_Phdr*)(base + eh->e_phoff);
  unsigned long end = 0;
  for (int i = 0; i < eh->e_phnum; ++i)
    if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr + ph[i].p_memsz > end) end = ph[i].p_vaddr + ph[i].p_memsz;
  return base + end;
}

static int present(long pagemap, unsigned long addr) {
  uint64_t e = 0;
  if (sys4(SYS_pread64, pagemap, (long)&e, sizeof e, (long)(addr / 4096 * 8)) != sizeof e) return 0;
  return (int)(e >> 63);
}

int main(void) {
  long fd = sys3(SYS_open, (long)"/proc/self/maps", 0, 0);
  long used = 0, n;
  while (fd >= 0 && used < (long)sizeof maps - 1 && (n = sys3(SYS_read, fd, (long)(maps + used), (long)sizeof maps - 1 - used)) > 0)
    used += n;
  maps[used] = '\0';
  long pagemap = sys3(SYS_open, (long)"/proc/self/pagemap", 0, 0);
  if (fd < 0 || pagemap < 0) {
    printf("error: cannot read /proc/self/maps or pagemap\n");
    return 1;
  }
  int windows = 0, bss_pages = 0, found = 0;
  unsigned long last_window = ~0ul, data_end = 0, base = 0;
  char offsets[512] = "", bss_offsets[512] = "";
  for (const char* line = maps; *line;) {
    const char* eol = strchr(line, '\n');
    if (!eol) break;
    const char* p = line;
    unsigned long lo = hex(&p);
    ++p;
    unsigned long hi = hex(&p);
    ++p;
    char perms[5] = {p[0], p[1], p[2], p[3], 0};
    p += 5;
    unsigned long off = hex(&p);
    int ours = memmem(line, (size_t)(eol - line), "libbonsai", 9) != NULL;
    int anon_after_data = !ours && data_end == lo && perms[1] == 'w' && eol[-1] == ' ';
    if (ours && !base) base = lo - off;  // the first mapping of the file: its load address
    if (ours && perms[2] == 'x') {
      found = 1;
      for (unsigned long a = lo; a < hi; a += 4096) {
        unsigned long window = (off + (a - lo)) / 65536;
        if (window >= 2 && window != last_window && present(pagemap, a)) {
          ++windows;
          last_window = window;
          size_t l = strlen(offsets);
          if (l + 24 < sizeof offsets) snprintf(offsets + l, sizeof offsets - l, "%s0x%lx", l ? "," : "", window * 65536);
        }
      }
    } else if (ours && perms[1] == 'w') {
      data_end = hi;
    } else if (anon_after_data) {
      unsigned long end = image_end(base);  // an adjacent anonymous mapping may be merged in
      for (unsigned long a = lo; a < hi && a < end; a += 4096)
        if (present(pagemap, a)) {
          ++bss_pages;
          size_t l = strlen(bss_offsets);
          if (l + 24 < sizeof bss_offsets) snprintf(bss_offsets + l, sizeof bss_offsets - l, "%s0x%lx", l ? "," : "", a - base);
        }
    }
    line = eol + 1;
  }
  if (!found) {
    printf("error: libbonsai.so is not mapped here\n");
    return 1;
  }
  printf("far_windows=%d far_offsets=%s bss_pages=%d bss_offsets=%s\n", windows, offsets, bss_pages, bss_offsets);
  return 0;
}
