// SPDX-License-Identifier: MIT
// The numbers the kernel's own headers give the calls bonsai limits in the 32-bit x86 and
// x32 ABIs (asm/unistd_32.h, asm/unistd_x32.h: one file each, as their __NR_ names clash
// with the x86_64 ones), with the call name each is charged under: an independent list
// to hold abi/syscall_table.h and the supervisor's filter against (issue #49).
#pragma once
#include <span>

#include "abi/calls.h"

namespace bonsai::test {

struct AbiCall {
  const char* name;  // the kernel's name in that ABI
  long nr;           // its number there (x32: with __X32_SYSCALL_BIT)
  CallId call;       // the call name of the limit language it is charged under
};

std::span<const AbiCall> abi_calls_i386();
std::span<const AbiCall> abi_calls_x32();

}  // namespace bonsai::test
