// SPDX-License-Identifier: MIT
// The x32 ABI's numbers of the calls bonsai limits, from the kernel's header (see
// abi_numbers.h): x86_64 numbers with __X32_SYSCALL_BIT, and numbers of 512 and up
// where x32 takes the 32-bit layouts (readv 515, recvfrom 517, preadv2 546...).
#include <asm/unistd_x32.h>

#include "abi_numbers.h"

#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif

namespace bonsai::test {
namespace {
#define C(n, c) {#n, __NR_##n, CallId::c}
constexpr AbiCall kCalls[] = {
    C(read, read), C(write, write), C(pread64, pread), C(pwrite64, pwrite), C(readv, readv), C(writev, writev),
    C(preadv, preadv), C(pwritev, pwritev), C(preadv2, preadv), C(pwritev2, pwritev), C(sendto, sendto),
    C(recvfrom, recvfrom), C(sendmsg, sendmsg), C(recvmsg, recvmsg), C(sendmmsg, sendmmsg), C(recvmmsg, recvmmsg),
    C(sendfile, sendfile), C(splice, splice), C(tee, tee), C(vmsplice, vmsplice),
    C(copy_file_range, copy_file_range), C(open, open), C(openat, openat), C(openat2, openat), C(creat, creat),
    C(close, close), C(connect, connect), C(accept, accept), C(accept4, accept4), C(fsync, fsync),
    C(fdatasync, fdatasync), C(unlink, unlink), C(unlinkat, unlinkat), C(rename, rename), C(renameat, rename),
    C(renameat2, rename), C(mkdir, mkdir), C(mkdirat, mkdir),
};
#undef C
}  // namespace

std::span<const AbiCall> abi_calls_x32() { return kCalls; }

}  // namespace bonsai::test
