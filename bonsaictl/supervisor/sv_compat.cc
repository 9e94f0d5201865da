// SPDX-License-Identifier: MIT
// 32-bit x86 calls in the 64-bit table's form (see sv_compat.h).
#include "supervisor/sv_compat.h"

#include <seccomp.h>

#include <array>
#include <cstring>
#include <unordered_map>

#include "supervisor/sv_target.h"

namespace bonsai::ctl {
namespace {

// i386 number -> the 64-bit entry, by name; built once.
const std::unordered_map<int, const SvSyscall*>& by_nr32() {
  static const auto* table = [] {
    auto* m = new std::unordered_map<int, const SvSyscall*>;
    for (const SvSyscall& s : sv_syscalls()) {
      int n = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86, s.name);
      if (n >= 0) m->emplace(n, &s);  // a negative number: a socketcall pseudo-call
    }
    // The socket calls made directly (Linux 4.3+; libseccomp names them by their
    // socketcall pseudo-numbers), and the 64-bit offset and time forms of the 32-bit ABI.
    for (auto [n32, name64] : {std::pair{362, "connect"}, std::pair{364, "accept4"}, std::pair{369, "sendto"},
                               std::pair{370, "sendmsg"}, std::pair{371, "recvfrom"}, std::pair{372, "recvmsg"},
                               std::pair{337, "recvmmsg"}, std::pair{345, "sendmmsg"}}) {
      int n64 = seccomp_syscall_resolve_name(name64);
      if (n64 >= 0)
        if (const SvSyscall* s = sv_syscall(n64)) m->emplace(n32, s);
    }
    for (auto [name32, name64] : {std::pair{"sendfile64", "sendfile"}, std::pair{"recvmmsg_time64", "recvmmsg"}}) {
      int n = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86, name32);
      int n64 = seccomp_syscall_resolve_name(name64);
      if (n >= 0 && n64 >= 0)
        if (const SvSyscall* s = sv_syscall(n64)) m->emplace(n, s);
    }
    return m;
  }();
  return *table;
}

constexpr int kSocketcall32 = 102;

// socketcall(call, args*): the call's 64-bit name and how many 32-bit words it takes.
struct Multiplexed {
  int call;
  const char* name;
  int nargs;
};
constexpr std::array<Multiplexed, 11> kSocketcalls = {{
    {3, "connect", 3}, {5, "accept", 3}, {9, "sendto", 4}, {10, "recvfrom", 4}, {11, "sendto", 6},
    {12, "recvfrom", 6}, {16, "sendmsg", 3}, {17, "recvmsg", 3}, {18, "accept4", 4}, {19, "recvmmsg", 5},
    {20, "sendmmsg", 4},
}};

bool read32(int tid, uint64_t addr, uint32_t* out, size_t n) { return sv_mem_read(tid, addr, out, n * 4); }

bool iov_total32(int tid, uint64_t addr, uint64_t count, uint64_t& total) {
  total = 0;
  if (count > 1024) return false;  // UIO_MAXIOV
  uint32_t v[128];                 // 64 entries of {base, len}
  for (uint64_t done = 0; done < count;) {
    uint64_t k = count - done < 64 ? count - done : 64;
    if (!read32(tid, addr + done * 8, v, k * 2)) return false;
    for (uint64_t i = 0; i < k; ++i) total += v[2 * i + 1];
    done += k;
  }
  return true;
}

// msghdr32: name, namelen, iov, iovlen, control, controllen, flags (28 bytes)
bool msg_total32(int tid, uint64_t addr, uint64_t& total) {
  uint32_t m[7];
  return read32(tid, addr, m, 7) && iov_total32(tid, m[2], m[3], total);
}

}  // namespace

int sv_compat_nr(int nr64) noexcept {
  const SvSyscall* want = sv_syscall(nr64);
  for (const auto& [n32, s] : by_nr32())
    if (s == want && std::strcmp(s->name, want->name) == 0) return n32;
  return -1;
}

bool sv_compat_call(int nr, const __u64 args[6], int tid, SvCompatCall& out) {
  out = SvCompatCall{};
  if (nr == kSocketcall32) {
    for (const Multiplexed& m : kSocketcalls) {
      if (static_cast<uint64_t>(m.call) != args[0]) continue;
      uint32_t w[6] = {};
      if (!read32(tid, args[1] & 0xffffffffu, w, static_cast<size_t>(m.nargs))) return false;
      for (int i = 0; i < 6; ++i) out.args[i] = w[i];  // send/recv: no address (args 4, 5 stay 0)
      out.sc = sv_syscall(seccomp_syscall_resolve_name(m.name));
      return out.sc != nullptr;
    }
    return false;
  }
  const auto& t = by_nr32();
  auto it = t.find(nr);
  if (it == t.end()) return false;
  out.sc = it->second;
  for (int i = 0; i < 6; ++i) out.args[i] = args[i] & 0xffffffffu;
  return true;
}

uint64_t sv_compat_asked(const SvSyscall& sc, const __u64 args[6], int tid) {
  uint64_t total = UINT64_MAX;
  switch (sc.size) {
    case SvSize::None: return 0;
    case SvSize::Arg: return args[sc.size_arg];
    case SvSize::Iov: return iov_total32(tid, args[sc.size_arg - 1], args[sc.size_arg], total) ? total : UINT64_MAX;
    case SvSize::Msg: return msg_total32(tid, args[sc.size_arg], total) ? total : UINT64_MAX;
    case SvSize::Mmsg: {  // mmsghdr32: msghdr32 and a 32-bit length (32 bytes)
      uint64_t n = args[sc.size_arg] < 1024 ? args[sc.size_arg] : 1024, sum = 0;
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t one = 0;
        if (!msg_total32(tid, args[sc.size_arg - 1] + i * 32, one)) return UINT64_MAX;
        sum += one;
      }
      return sum;
    }
  }
  return UINT64_MAX;
}

}  // namespace bonsai::ctl
