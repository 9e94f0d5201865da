// SPDX-License-Identifier: MIT
// Joining a service's running supervisor (docs/reference/limits.md "Process trees"): what
// bonsaictl's supervisor and the library agree on. A supervisor started for a service's
// static or Go child (`bonsaictl sv-exec`) listens on a unix socket named after the
// service, in a directory of the segment owner's under /dev/shm. A service process about
// to execute another static program connects to it, receives the seccomp filter the
// supervisor built for the limits in force (classic BPF, a header and its instructions
// in one message), loads it with a new listener, sends the listener (and its stderr)
// back with SCM_RIGHTS and executes the program itself: no exec of bonsaictl, no fork,
// no libseccomp in the child (~0.1 ms against ~8.5 ms). When no supervisor answers, the
// trampoline starts one as before.
//
// Who may serve and who may join. The rendezvous is a pathname socket, never an abstract
// name (those live in the network namespace and ignore permissions: a container on the
// host's network could bind one first): /dev/shm/<prefix>bonsai-sv.<owner uid>.d/<service>,
// the directory made 0700 by the server. Both sides open the directory with O_NOFOLLOW
// and use it only if it is a directory of their own user (the owner as this user
// namespace maps it) with no group or other bits (sv_join_dir_ok), and reach the socket
// through that open directory (sv_join_via), never by its name again. Only the
// segment's owner serves and joins (a process of another uid for the owner's segment,
// root included, starts its own supervisor). The joiner hands its listener only to a
// peer of its own uid (no root exception) in its own pid namespace; the supervisor
// sends its filter only to a joiner of its own uid in its own pid namespace (a process
// it cannot see would be neither charged nor counted). Anything else: the trampoline.
// Header-only, no allocation: the library uses it after fork().
#pragma once
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>

#include "abi/calls.h"

namespace bonsai {

// The calls a supervisor can time for `protect:` (bonsaictl/supervisor/sv_protect.h): the
// reads at an offset of their own, pread and preadv (preadv2 is preadv); not read and readv.
inline constexpr CallMask kSvTimedCalls = call_bit(CallId::pread) | call_bit(CallId::preadv);

// Does a static or Go program of the service need a supervisor? A limit in force, or a
// protected call the supervisor times. bonsaictl's trampoline decides by it, and the
// library before starting the trampoline at all: a static child of a service without
// either is executed as asked (no exec of bonsaictl per child, ~8 ms).
inline bool sv_service_supervised(uint32_t limit_count, uint64_t protect_calls) noexcept {
  return limit_count > 0 || (protect_calls & kSvTimedCalls) != 0;
}

// A change of this protocol (messages or rendezvous) changes it: a joiner and a
// supervisor of different versions then never take each other's word.
inline constexpr uint32_t kSvJoinMagic = 0x324a5642;  // "BVJ2" (pathname rendezvous)
inline constexpr uint32_t kSvJoinMaxInsns = 512;      // the child keeps the filter on its stack

struct SvJoinHeader {
  uint32_t magic;
  uint32_t insns;  // struct sock_filter entries that follow (8 bytes each)
};

namespace detail {
// Appends `s` at out[n]; false if it does not fit `cap`.
inline bool sv_join_put(char* out, size_t cap, size_t& n, const char* s) noexcept {
  for (; s && *s; ++s) {
    if (n >= cap) return false;
    out[n++] = *s;
  }
  return true;
}
// Appends `v` in decimal.
inline bool sv_join_put_uint(char* out, size_t cap, size_t& n, unsigned long v) noexcept {
  char digits[24];
  size_t d = 0;
  do digits[d++] = static_cast<char>('0' + v % 10); while ((v /= 10) && d < sizeof digits);
  char num[25];
  for (size_t i = 0; i < d; ++i) num[i] = digits[d - 1 - i];
  num[d] = '\0';
  return sv_join_put(out, cap, n, num);
}
}  // namespace detail

// The rendezvous directory: "/dev/shm/" PREFIX "bonsai-sv." UID ".d", NUL-terminated.
// `uid` is the segment's owner (BONSAI_SHM_UID), as the name of its segment carries it.
// @return its length, 0 if it does not fit `cap` (no rendezvous then: the trampoline's way).
inline size_t sv_join_dir(char* out, size_t cap, const char* prefix, unsigned uid) noexcept {
  size_t n = 0;
  if (!cap || !detail::sv_join_put(out, cap - 1, n, "/dev/shm/") || !detail::sv_join_put(out, cap - 1, n, prefix) ||
      !detail::sv_join_put(out, cap - 1, n, "bonsai-sv.") || !detail::sv_join_put_uint(out, cap - 1, n, uid) ||
      !detail::sv_join_put(out, cap - 1, n, ".d"))
    return 0;
  out[n] = '\0';
  return n;
}

// The socket as reached through the open, checked directory `dirfd`:
// "/proc/self/fd/" DIRFD "/" SERVICE, NUL-terminated (short whatever the prefix: it fits
// sockaddr_un). The service is a segment's service name (no '/'): the caller checks it.
// @return its length, 0 if there is no service or it does not fit `cap`.
inline size_t sv_join_via(char* out, size_t cap, int dirfd, const char* service) noexcept {
  size_t n = 0;
  if (!cap || dirfd < 0 || !service || !*service || !detail::sv_join_put(out, cap - 1, n, "/proc/self/fd/") ||
      !detail::sv_join_put_uint(out, cap - 1, n, static_cast<unsigned long>(dirfd)) ||
      !detail::sv_join_put(out, cap - 1, n, "/") || !detail::sv_join_put(out, cap - 1, n, service))
    return 0;
  out[n] = '\0';
  return n;
}

// The reply-free join. A joiner that waits for the filter waits for the supervisor to be
// scheduled (1.4-2.1x a bare start on a busy machine). So the serving supervisor also
// publishes the filter for the limits in force in the same directory, as the file
// ".bpf.<service>" (a leading dot: no service name starts with one), header then
// instructions, rewritten (write and rename) whenever the limits move. A joiner that
// finds it (a regular file of its own user, no group or other bits, the exact size),
// written by the very supervisor it connected to (`pid` against the connection's
// SO_PEERCRED) for the limits in force now (`limits_seq` against the segment's), loads
// it and hands its listener over without waiting for an answer: the listener queues on
// the connection until the supervisor accepts it. Anything else: the round trip as
// before. A supervisor about to end shuts its socket to new connections and takes what
// is queued first (sv_serve.h), so no listener handed over this way is lost.
inline constexpr uint32_t kSvJoinFileMagic = 0x464a5642;  // "BVJF"

struct SvJoinFileHeader {
  uint32_t magic;
  uint32_t insns;       // struct sock_filter entries that follow
  uint64_t limits_seq;  // the segment's limits sequence the filter was built for
  int32_t pid;          // the supervisor that wrote it (as its pid namespace sees it)
  uint32_t reserved;
};

// The published filter's name in the directory: ".bpf." SERVICE, NUL-terminated.
// @return its length, 0 if it does not fit `cap`.
inline size_t sv_join_file_name(char* out, size_t cap, const char* service) noexcept {
  size_t n = 0;
  if (!cap || !service || !*service || !detail::sv_join_put(out, cap - 1, n, ".bpf.") ||
      !detail::sv_join_put(out, cap - 1, n, service))
    return 0;
  out[n] = '\0';
  return n;
}

// Is the opened rendezvous directory (its fstat) one that `me` may use: a directory of
// `me`'s with no group or other bits? Anything else was made by someone else (squatted
// first) or opened up: the caller does not use it.
inline bool sv_join_dir_ok(const struct stat& st, unsigned me) noexcept {
  return S_ISDIR(st.st_mode) && st.st_uid == me && (st.st_mode & 077) == 0;
}

}  // namespace bonsai
