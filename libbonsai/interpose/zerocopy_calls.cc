// SPDX-License-Identifier: MIT
// Zero-copy calls: sendfile(+64), copy_file_range, splice, vmsplice, tee. Each is a
// write under its own name, looked up on the destination descriptor, and a read of its
// source: `read` (`pread` when given a source offset pointer) looked up on the source
// descriptor (wrap::zero_copy; vmsplice's source is memory: a write only). A limited call larger than a
// chunk is clamped to one (callers loop on short results: the same shape as a
// non-blocking write), which also tames cp's copy_file_range requests of ~2^63 bytes.
#include <fcntl.h>
#include <sys/sendfile.h>

#include "interpose/compressed/compress_hooks.h"
#include "interpose/iov_cursor.h"
#include "interpose/real.h"
#include "interpose/wrap.h"

using namespace bonsai;

extern "C" {
#pragma GCC visibility push(default)

[[gnu::noinline]] static ssize_t sendfile_slow(int o, int i, off_t* off, size_t n) {
  return wrap::zero_copy(CallId::sendfile, o, wrap::source_call(off), i, n, [&](size_t len) { return real::sendfile(o, i, off, len); });
}
ssize_t sendfile(int o, int i, off_t* off, size_t n) {
  if (compress::tx_framed(o)) [[unlikely]] return compress::tx_sendfile(o, i, reinterpret_cast<off64_t*>(off), n, CallId::sendfile);
  BONSAI_FAST_ZC(sendfile, wrap::source_call(off), sendfile, (o, i, off, n));
  return sendfile_slow(o, i, off, n);
}

[[gnu::noinline]] static ssize_t sendfile64_slow(int o, int i, off64_t* off, size_t n) {
  return wrap::zero_copy(CallId::sendfile, o, wrap::source_call(off), i, n,
                         [&](size_t len) { return real::sendfile64(o, i, off, len); });
}
ssize_t sendfile64(int o, int i, off64_t* off, size_t n) {
  if (compress::tx_framed(o)) [[unlikely]] return compress::tx_sendfile(o, i, off, n, CallId::sendfile);
  BONSAI_FAST_ZC(sendfile, wrap::source_call(off), sendfile64, (o, i, off, n));
  return sendfile64_slow(o, i, off, n);
}

[[gnu::noinline]] static ssize_t copy_file_range_slow(int i, off64_t* io, int o, off64_t* oo, size_t n, unsigned int f) {
  return wrap::zero_copy(CallId::copy_file_range, o, wrap::source_call(io), i, n,
                         [&](size_t len) { return real::copy_file_range(i, io, o, oo, len, f); });
}
ssize_t copy_file_range(int i, off64_t* io, int o, off64_t* oo, size_t n, unsigned int f) {
  BONSAI_FAST_ZC(copy_file_range, wrap::source_call(io), copy_file_range, (i, io, o, oo, n, f));
  return copy_file_range_slow(i, io, o, oo, n, f);
}

[[gnu::noinline]] static ssize_t splice_slow(int i, off64_t* io, int o, off64_t* oo, size_t n, unsigned int f) {
  return wrap::zero_copy(CallId::splice, o, wrap::source_call(io), i, n,
                         [&](size_t len) { return real::splice(i, io, o, oo, len, f); }, (f & SPLICE_F_NONBLOCK) != 0);
}
ssize_t splice(int i, off64_t* io, int o, off64_t* oo, size_t n, unsigned int f) {
  if (compress::tx_framed(o)) [[unlikely]] return compress::tx_sendfile(o, i, io, n, CallId::splice);
  if (!io && compress::rx_framed(i)) [[unlikely]] return compress::rx_splice(i, o, n, f);
  BONSAI_FAST_ZC(splice, wrap::source_call(io), splice, (i, io, o, oo, n, f));
  return splice_slow(i, io, o, oo, n, f);
}

[[gnu::noinline]] static ssize_t tee_slow(int i, int o, size_t n, unsigned int f) {
  return wrap::zero_copy(CallId::tee, o, CallId::read, i, n, [&](size_t len) { return real::tee(i, o, len, f); },
                         (f & SPLICE_F_NONBLOCK) != 0);
}
ssize_t tee(int i, int o, size_t n, unsigned int f) {
  BONSAI_FAST_ZC(tee, CallId::read, tee, (i, o, n, f));
  return tee_slow(i, o, n, f);
}

// vmsplice: clamped like the others, to the caller's first chunk of pages (a bounded
// copy of its vector on the stack; page multiples, so gifted pages stay whole).
[[gnu::noinline]] static ssize_t vmsplice_slow(int fd, const iovec* v, size_t c, unsigned int f) {
  size_t n;
  if (!wrap::iov_sum(v, static_cast<long>(c), n)) n = 0;  // the kernel refuses it: one call
  return wrap::zero_copy(CallId::vmsplice, fd, CallId::count_, -1, n, [&](size_t len) {
    if (len == n) return real::vmsplice(fd, v, c, f);
    if (len >= 8192) len &= ~size_t{4095};
    iovec sub[wrap::kPieceIov];
    int k = 0;
    wrap::IovCursor cur(v, static_cast<long>(c));
    cur.piece(0, len, sub, k);
    return real::vmsplice(fd, sub, static_cast<size_t>(k), f);
  });
}
ssize_t vmsplice(int fd, const iovec* v, size_t c, unsigned int f) {
  BONSAI_FAST(vmsplice, vmsplice, (fd, v, c, f));
  return vmsplice_slow(fd, v, c, f);
}

#pragma GCC visibility pop
}  // extern "C"
