// SPDX-License-Identifier: MIT
// 32-bit x86 calls in the 64-bit table's form (see sv_compat.h).
#include "supervisor/sv_compat.h"

#include <seccomp.h>

#include <array>

#include "supervisor/sv_target.h"

namespace bonsai::ctl {
namespace {

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
  const SvSyscall* s = sv_syscall(nr64);
  return s ? s->i386_nr : -1;
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
  out.sc = syscall_entry_i386(nr);  // the table's i386 columns (abi/syscall_table.h)
  if (!out.sc) return false;
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
