// SPDX-License-Identifier: MIT
// The call names of the limit language and their ids: one definition, shared by
// libbonsai and bonsaictl. Pure data and lookups: no allocation, no syscalls.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace bonsai {

// Order is ABI (it indexes counters and the bucket table in shared memory):
// append only, and bump BONSAI_ABI_VERSION when it changes.
#define BONSAI_DATA_CALLS(X)                                                   \
  X(read, Read) X(pread, Read) X(readv, Read) X(preadv, Read) X(recv, Read)    \
  X(recvfrom, Read) X(recvmsg, Read) X(recvmmsg, Read) X(write, Write)         \
  X(pwrite, Write) X(writev, Write) X(pwritev, Write) X(send, Write)           \
  X(sendto, Write) X(sendmsg, Write) X(sendmmsg, Write) X(sendfile, Write)     \
  X(splice, Write) X(vmsplice, Write) X(tee, Write) X(copy_file_range, Write)  \
  X(fread, Read) X(fwrite, Write)

#define BONSAI_META_CALLS(X)                                                   \
  X(open, Meta) X(openat, Meta) X(creat, Meta) X(close, Meta)                  \
  X(connect, Meta) X(accept, Meta) X(accept4, Meta) X(fsync, Meta)             \
  X(fdatasync, Meta) X(unlink, Meta) X(unlinkat, Meta) X(rename, Meta)         \
  X(mkdir, Meta)

enum class CallId : uint8_t {
#define BONSAI_X(name, dir) name,
  BONSAI_DATA_CALLS(BONSAI_X) BONSAI_META_CALLS(BONSAI_X)
#undef BONSAI_X
  count_
};

inline constexpr size_t kCallCount = static_cast<size_t>(CallId::count_);
static_assert(kCallCount <= 64, "call sets are 64-bit masks");

enum class CallDir : uint8_t { Read, Write, Meta };

// Kinds of file descriptor a rule may be restricted to (`:fd=`). `None` is for
// calls that have no descriptor (open, unlink...): only rules without `fd=` apply.
enum class FdKind : uint8_t { Socket = 0, File = 1, Pipe = 2, None = 3 };
inline constexpr size_t kFdKindCount = 4;

using CallMask = uint64_t;
inline constexpr CallMask call_bit(CallId c) { return CallMask{1} << static_cast<unsigned>(c); }

// @return the call's name as used in BONSAI_LIMITS and YAML ("pread", "fwrite").
std::string_view call_name(CallId c) noexcept;
CallDir call_dir(CallId c) noexcept;
inline bool call_is_data(CallId c) { return call_dir(c) != CallDir::Meta; }

// Resolves a call or group name ("read", "reads", "writes", "opens": open+openat+creat).
// @return the set of calls it names, or 0 if the name is unknown.
CallMask call_mask_from_name(std::string_view name) noexcept;

// @return the known call or group name closest to `name` (edit distance <= 2),
// or an empty view. For "did you mean" diagnostics.
std::string_view call_name_suggest(std::string_view name) noexcept;

std::string_view fd_kind_name(FdKind k) noexcept;

}  // namespace bonsai
