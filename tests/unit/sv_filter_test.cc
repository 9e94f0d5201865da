// SPDX-License-Identifier: MIT
// The supervisor's seccomp filter (bonsaictl/supervisor/sv_filter.h), as the kernel would
// run it: the filter libseccomp builds is exported as classic BPF and run here on
// seccomp_data for each call of each ABI (issue #49: the 32-bit ABI's sendfile64 and
// recvmmsg_time64 went unnotified; a limit set naming no system call got no listener).
#include <catch2/catch.hpp>

#include <cerrno>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "abi/strict_mark.h"
#include "abi/syscall_table.h"
#include "abi_numbers.h"
#include "supervisor/sv_filter.h"

using namespace bonsai;
using namespace bonsai::ctl;
using bonsai::test::AbiCall;

namespace {

constexpr uint32_t kNotify = SECCOMP_RET_USER_NOTIF;
constexpr uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr uint32_t kBad = 0xdeadbeef;  // the program did something this runner does not know

// The filter as the kernel loads it (seccomp_export_bpf through a memfd).
std::vector<sock_filter> exported(const std::vector<int>& nrs, uint32_t mark, bool deny_io_uring = false) {
  std::string why;
  scmp_filter_ctx ctx = sv_filter_build(nrs, deny_io_uring, mark, why);
  INFO(why);
  REQUIRE(ctx);
  int fd = memfd_create("bpf", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(seccomp_export_bpf(ctx, fd) == 0);
  seccomp_release(ctx);
  off_t len = lseek(fd, 0, SEEK_END);
  std::vector<sock_filter> prog(static_cast<size_t>(len) / sizeof(sock_filter));
  REQUIRE(pread(fd, prog.data(), static_cast<size_t>(len), 0) == len);
  close(fd);
  return prog;
}

// Classic BPF as seccomp runs it: A, X, 16 words of scratch, loads from seccomp_data.
uint32_t run(const std::vector<sock_filter>& prog, uint32_t arch, int nr, const uint64_t args[6] = nullptr) {
  seccomp_data d{};
  d.nr = nr;
  d.arch = arch;
  for (int i = 0; args && i < 6; ++i) d.args[i] = args[i];
  uint32_t a = 0, x = 0, mem[16] = {};
  for (size_t pc = 0, steps = 0; pc < prog.size() && steps < 100000; ++pc, ++steps) {
    const sock_filter& f = prog[pc];
    switch (f.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        if (f.k + 4 > sizeof d) return kBad;
        std::memcpy(&a, reinterpret_cast<const char*>(&d) + f.k, 4);
        break;
      case BPF_LD | BPF_IMM: a = f.k; break;
      case BPF_LDX | BPF_IMM: x = f.k; break;
      case BPF_LD | BPF_MEM: a = mem[f.k & 15]; break;
      case BPF_LDX | BPF_MEM: x = mem[f.k & 15]; break;
      case BPF_ST: mem[f.k & 15] = a; break;
      case BPF_STX: mem[f.k & 15] = x; break;
      case BPF_ALU | BPF_AND | BPF_K: a &= f.k; break;
      case BPF_ALU | BPF_OR | BPF_K: a |= f.k; break;
      case BPF_MISC | BPF_TAX: x = a; break;
      case BPF_MISC | BPF_TXA: a = x; break;
      case BPF_JMP | BPF_JA: pc += f.k; break;
      case BPF_JMP | BPF_JEQ | BPF_K: pc += a == f.k ? f.jt : f.jf; break;
      case BPF_JMP | BPF_JGT | BPF_K: pc += a > f.k ? f.jt : f.jf; break;
      case BPF_JMP | BPF_JGE | BPF_K: pc += a >= f.k ? f.jt : f.jf; break;
      case BPF_JMP | BPF_JSET | BPF_K: pc += (a & f.k) ? f.jt : f.jf; break;
      case BPF_JMP | BPF_JEQ | BPF_X: pc += a == x ? f.jt : f.jf; break;
      case BPF_JMP | BPF_JGT | BPF_X: pc += a > x ? f.jt : f.jf; break;
      case BPF_JMP | BPF_JGE | BPF_X: pc += a >= x ? f.jt : f.jf; break;
      case BPF_RET | BPF_K: return f.k;  // the action and its data (an errno)
      case BPF_RET | BPF_A: return a;
      default: return kBad;
    }
  }
  return kBad;
}

std::vector<int> every_row() {
  std::vector<int> nrs;
  for (const SyscallEntry& e : syscall_table()) nrs.push_back(e.nr);
  return nrs;
}

constexpr uint32_t kMark = 0x8badf00du;

}  // namespace

TEST_CASE("sv_filter: every i386 and x32 number of a limited call is its own table row", "[sv_filter]") {
  for (const AbiCall& c : bonsai::test::abi_calls_i386()) {
    INFO("i386 " << c.name << " (" << c.nr << ")");
    const SyscallEntry* e = syscall_entry_i386(c.nr);
    REQUIRE(e);
    CHECK(e->call == c.call);
    CHECK((e->i386_nr == c.nr || e->i386_nr64 == c.nr));
  }
  // x32 has no row: the filter notifies it by libseccomp's translation of the row's name
  // and the supervisor refuses it (below); each must be a name of the table.
  for (const AbiCall& c : bonsai::test::abi_calls_x32()) {
    INFO("x32 " << c.name << " (" << c.nr << ")");
    CHECK(seccomp_syscall_resolve_name_arch(SCMP_ARCH_X32, c.name) == c.nr);
    bool named = false;
    for (const SyscallEntry& e : syscall_table()) named |= std::string(e.name) == c.name && e.call == c.call;
    CHECK(named);
  }
}

TEST_CASE("sv_filter: each call is notified in every ABI by its own number", "[sv_filter]") {
  const uint64_t args[6] = {};
  for (uint32_t mark : {0u, kMark}) {
    INFO("strict mark " << mark);
    std::vector<sock_filter> prog = exported(every_row(), mark);
    for (const SyscallEntry& e : syscall_table()) {
      INFO("x86_64 " << e.name);
      CHECK(run(prog, AUDIT_ARCH_X86_64, e.nr, args) == kNotify);
    }
    for (const AbiCall& c : bonsai::test::abi_calls_i386()) {
      INFO("i386 " << c.name << " (" << c.nr << ")");
      CHECK(run(prog, AUDIT_ARCH_I386, static_cast<int>(c.nr), args) == kNotify);
    }
    for (const AbiCall& c : bonsai::test::abi_calls_x32()) {
      INFO("x32 " << c.name << " (" << c.nr << ")");
      CHECK(run(prog, AUDIT_ARCH_X86_64, static_cast<int>(c.nr), args) == kNotify);
    }
    for (uint64_t sc : {3, 5, 9, 10, 11, 12, 16, 17, 18, 19, 20}) {  // socketcall's connect ... sendmmsg
      INFO("i386 socketcall " << sc);
      const uint64_t sa[6] = {sc, 0x1000};
      CHECK(run(prog, AUDIT_ARCH_I386, 102, sa) == kNotify);
    }
    CHECK(run(prog, AUDIT_ARCH_I386, 20, args) == kAllow);                  // getpid
    CHECK(run(prog, AUDIT_ARCH_X86_64, SYS_getpid, args) == kAllow);
    if (mark) {  // the library's marked calls go by (the 32-bit ABI has no upper half to mark)
      const uint64_t marked[6] = {strict_marked_arg(mark, 3)};
      CHECK(run(prog, AUDIT_ARCH_X86_64, SYS_write, marked) == kAllow);
      CHECK(run(prog, AUDIT_ARCH_X86_64, SYS_openat, marked) == kAllow);
    }
  }
}

TEST_CASE("sv_filter: a 64-bit name brings its 32-bit forms and nothing else", "[sv_filter]") {
  const uint64_t args[6] = {};
  std::vector<sock_filter> prog = exported({SYS_sendfile}, kMark);
  CHECK(run(prog, AUDIT_ARCH_I386, 187, args) == kNotify);  // sendfile
  CHECK(run(prog, AUDIT_ARCH_I386, 239, args) == kNotify);  // sendfile64: issue #49
  CHECK(run(prog, AUDIT_ARCH_X86_64, SYS_sendfile, args) == kNotify);
  CHECK(run(prog, AUDIT_ARCH_I386, 4, args) == kAllow);  // write
  CHECK(run(prog, AUDIT_ARCH_X86_64, SYS_write, args) == kAllow);
  prog = exported({SYS_recvmmsg}, 0);
  CHECK(run(prog, AUDIT_ARCH_I386, 337, args) == kNotify);
  CHECK(run(prog, AUDIT_ARCH_I386, 417, args) == kNotify);  // recvmmsg_time64: issue #49
  CHECK(run(prog, AUDIT_ARCH_X86_64, 0x40000000 | 537, args) == kNotify);  // x32 recvmmsg
  CHECK(sv_filter_numbers(SYS_write) == std::vector<int>{SYS_write});
}

TEST_CASE("sv_filter: io_uring and unmarked kernel AIO are denied in every ABI", "[sv_filter]") {
  const uint64_t args[6] = {};
  constexpr uint32_t kEnosys = SECCOMP_RET_ERRNO | ENOSYS;
  for (bool deny : {false, true}) {
    for (uint32_t mark : {0u, kMark}) {
      INFO("deny_io_uring " << deny << ", strict mark " << mark);
      std::vector<sock_filter> prog = exported({SYS_write}, mark, deny);
      uint32_t ring = deny || mark ? kEnosys : kAllow;  // strict denies it whatever is asked
      uint32_t aio = mark ? kEnosys : kAllow;
      CHECK(run(prog, AUDIT_ARCH_X86_64, 425, args) == ring);  // io_uring_setup
      CHECK(run(prog, AUDIT_ARCH_I386, 425, args) == ring);
      CHECK(run(prog, AUDIT_ARCH_X86_64, 0x40000000 | 425, args) == ring);  // x32
      CHECK(run(prog, AUDIT_ARCH_X86_64, SYS_io_setup, args) == aio);
      CHECK(run(prog, AUDIT_ARCH_I386, 245, args) == aio);  // io_setup: no upper half to mark
      CHECK(run(prog, AUDIT_ARCH_X86_64, 0x40000000 | 543, args) == aio);
      if (mark) {
        const uint64_t marked[6] = {strict_marked_arg(mark, 8)};
        CHECK(run(prog, AUDIT_ARCH_X86_64, SYS_io_setup, marked) == kAllow);  // the library's (libaio)
      }
    }
  }
}

TEST_CASE("sv_filter: a limit set naming no system call still gets a listener", "[sv_filter]") {
  // fread/fwrite rules only: nothing to notify, but the kernel hands a listener over only
  // for a filter that can notify (issue #49: "handing the listener over failed").
  for (uint32_t mark : {0u, kMark}) {
    std::vector<sock_filter> prog = exported({}, mark);
    bool can_notify = false;
    for (const sock_filter& f : prog) can_notify |= f.code == (BPF_RET | BPF_K) && f.k == kNotify;
    CHECK(can_notify);
    const uint64_t args[6] = {3};
    CHECK(run(prog, AUDIT_ARCH_X86_64, SYS_write, args) == kAllow);
    CHECK(run(prog, AUDIT_ARCH_X86_64, SYS_fcntl, args) == kAllow);
  }
}
