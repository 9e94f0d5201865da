// SPDX-License-Identifier: MIT
// Receiving half of a compressed connection (see rx_stream.h).
#include "compress/rx_stream.h"

#include <cerrno>
#include <cstring>

#include "compress/wire_format.h"
#include "log/blog.h"

namespace bonsai::compress {
namespace {

size_t align64(size_t n) { return (n + 63) & ~size_t{63}; }

enum class Step { Progress, NeedMore, Corrupt };

size_t in_avail(const RxStream& s) { return s.in_end - s.in_beg; }

ssize_t fail(RxStream& s, const char* why) {
  if (!s.error) blog(LogLevel::Error, "compressed stream: %s; connection reset", why);
  s.error = ECONNRESET;
  errno = ECONNRESET;
  return -1;
}

// Before a new zstd frame of zstd stream i asking for `window` bytes (0: unknown): the
// stream's decoder, set up on its first frame (the second stream's) and moved to an
// 8 MiB workspace when a frame first asks for more than 2 MiB (codec.h,
// kZstdWidenAfter). A window beyond the version's bound is left to the decoder, which
// refuses it. @return false (and *why) if the memory is not there.
bool zstd_decoder_for(RxStream& s, int i, uint64_t window, const char** why) {
  RxCodec& c = s.codec;
  bool wide = window > (uint64_t{1} << kZstdWindowLogNarrow) && window <= (uint64_t{1} << c.window_log_max);
  if (c.dctx[i] && (!wide || c.wide[i])) return true;
  if (wide) {
    size_t n = rx_codec_wide_size();
    void* mem = s.extra.wide ? s.extra.wide(s.extra.ctx, i, n) : nullptr;
    if (mem && rx_codec_widen(c, i, mem, n)) return true;
    *why = "no memory for an 8 MiB zstd window (BONSAI_COMPRESS_MEM_MIB)";
    return false;
  }
  size_t n = rx_codec_extra_size();  // the second stream's first frame, 2 MiB
  void* mem = s.extra.get ? s.extra.get(s.extra.ctx, n) : nullptr;
  if (mem && rx_codec_attach(c, mem, n)) return true;
  *why = "no memory for a second zstd stream (BONSAI_COMPRESS_MEM_MIB)";
  return false;
}

// Parses what is buffered: the stream header, a frame header, a whole compressed frame.
Step parse(RxStream& s, const char** why) {
  size_t avail = in_avail(s);
  const uint8_t* p = s.in + s.in_beg;
  if (s.need_stream_header) {
    if (avail == 0) return Step::NeedMore;
    HeaderMatch hm = stream_header_match(p, avail);
    if (hm == HeaderMatch::Prefix) return Step::NeedMore;
    if (hm != HeaderMatch::Yes) {
      *why = hm == HeaderMatch::BadVersion ? "unsupported wire version" : "bad stream header";
      return Step::Corrupt;
    }
    s.version = p[7];
    rx_codec_set_version(s.codec, s.version);
    s.in_beg += kStreamHeaderSize;
    s.need_stream_header = false;
    return Step::Progress;
  }
  if (s.raw_left || s.out_pos < s.out_len) return Step::NeedMore;  // caller serves those first
  if (avail < kFrameHeaderSize) return Step::NeedMore;
  FrameHeader h;
  if (!frame_header_parse(p, h, s.version)) {
    *why = "bad frame header";
    return Step::Corrupt;
  }
  if (h.method == Method::Raw) {
    s.raw_left = h.raw_len;
    s.in_beg += kFrameHeaderSize;
    return Step::Progress;
  }
  if (avail < kFrameHeaderSize + h.wire_len) return Step::NeedMore;
  const uint8_t* payload = p + kFrameHeaderSize;
  s.dec = s.out;
  if (h.method == Method::Zstd && (h.flags & kFlagNewStream) && !zstd_decoder_for(s, h.flags & kFlagZstd2 ? 1 : 0, zstd_frame_window(payload, h.wire_len), why))
    return Step::Corrupt;
  if (s.version == kWireVersionOld) {
    if (!codec_decompress(s.codec, h.method, payload, h.wire_len, s.out, h.raw_len)) s.dec = nullptr;
  } else {
    s.dec = codec_decompress_stream(s.codec, h.method, h.flags, payload, h.wire_len, s.out, h.raw_len);
  }
  if (!s.dec) {
    *why = "corrupt frame payload";
    return Step::Corrupt;
  }
  s.out_pos = 0;
  s.out_len = h.raw_len;
  s.in_beg += kFrameHeaderSize + h.wire_len;
  return Step::Progress;
}

// Copies buffered bytes (decoded, or a raw frame's payload) into iov at `got`.
size_t serve(RxStream& s, const iovec* iov, int cnt, size_t got, size_t want, bool peek) {
  if (s.out_pos < s.out_len) {
    size_t n = iov_copy_in(iov, cnt, got, s.dec + s.out_pos, want - got < s.out_len - s.out_pos ? want - got : s.out_len - s.out_pos);
    if (!peek) s.out_pos += n;
    return n;
  }
  if (s.raw_left && in_avail(s) >= s.raw_left) {  // a raw frame is served once whole
    size_t n = s.raw_left;
    if (n > want - got) n = want - got;
    n = iov_copy_in(iov, cnt, got, s.in + s.in_beg, n);
    if (!peek) {
      s.in_beg += n;
      s.raw_left -= static_cast<uint32_t>(n);
    }
    return n;
  }
  return 0;
}

ssize_t metered_recv(const IoOps& io, const WireMeter& m, int fd, uint8_t* buf, size_t n, int flags) {
  if (m.allow) {
    size_t a = m.allow(m.ctx, n);
    if (a && a < n) n = a;
  }
  ssize_t r = io.recv(fd, buf, n, flags);
  if (m.charge) m.charge(m.ctx, r);
  return r;
}

// Reads the rest of a raw frame (raw_left bytes, none of them buffered) straight
// into the caller's buffer at `got`, if one iovec has room for all of it. Its bytes
// count only once the frame is whole: a stream ending inside it is an error, and a
// call interrupted inside it (EAGAIN, EINTR) keeps what arrived in s.in.
// @return raw bytes delivered (the whole frame), 0 if the frame must go through the
// buffer instead, or -1 with errno.
ssize_t recv_direct(RxStream& s, const IoOps& io, const WireMeter& m, int fd, const iovec* iov, int cnt, size_t got, size_t want,
                    int flags) {
  size_t skip = got;
  int i = 0;
  while (i < cnt && skip >= iov[i].iov_len) skip -= iov[i++].iov_len;
  size_t need = s.raw_left;
  if (i == cnt || iov[i].iov_len - skip < need || want - got < need) return 0;
  uint8_t* dst = static_cast<uint8_t*>(iov[i].iov_base) + skip;
  size_t done = 0;
  while (done < need) {
    ssize_t r = metered_recv(io, m, fd, dst + done, need - done, flags);
    if (r > 0) {
      done += static_cast<size_t>(r);
      s.wire_bytes += static_cast<uint64_t>(r);
      continue;
    }
    if (r == 0) return fail(s, "stream ended inside a frame");
    if (done) {  // keep the part that arrived; the caller sees the error (errno kept)
      std::memcpy(s.in, dst, done);
      s.in_beg = 0;
      s.in_end = done;
    }
    return -1;
  }
  s.raw_left = 0;
  return static_cast<ssize_t>(need);
}

}  // namespace

size_t rx_stream_size() noexcept { return align64(kRxInCap) + align64(kMaxFrameRaw) + rx_codec_size(); }

bool rx_stream_init(RxStream& s, void* mem, size_t size) noexcept {
  if (size < rx_stream_size()) return false;
  s = RxStream{};
  auto* base = static_cast<uint8_t*>(mem);
  s.in = base;
  s.out = base + align64(kRxInCap);
  s.dec = s.out;
  s.need_stream_header = true;
  size_t used = align64(kRxInCap) + align64(kMaxFrameRaw);
  return rx_codec_init(s.codec, base + used, size - used);
}

namespace {
// A whole frame (or the rest of a raw one) waits in s.in, with a header that parses:
// the next parse() decodes it without a recv.
bool frame_buffered(const RxStream& s) {
  if (s.error || s.need_stream_header) return false;
  if (s.raw_left) return in_avail(s) >= s.raw_left;
  if (in_avail(s) < kFrameHeaderSize) return false;
  FrameHeader h;
  return frame_header_parse(s.in + s.in_beg, h, s.version) && in_avail(s) >= kFrameHeaderSize + h.wire_len;
}
}  // namespace

bool rx_pending(const RxStream& s) noexcept {
  if (s.error || s.out_pos < s.out_len || (s.raw_left && in_avail(s) >= s.raw_left)) return true;
  if (s.raw_left || s.need_stream_header || in_avail(s) < kFrameHeaderSize) return false;
  FrameHeader h;
  if (!frame_header_parse(s.in + s.in_beg, h, s.version)) return true;  // the error is waiting
  return in_avail(s) >= kFrameHeaderSize + h.wire_len;  // a whole frame (raw: wire_len == raw_len)
}

ssize_t rx_read(RxStream& s, const IoOps& io, const WireMeter& m, int fd, const iovec* iov, int cnt, int flags) noexcept {
  if (s.error) {
    errno = s.error;
    return -1;
  }
  size_t want = iov_sum(iov, cnt);
  if (want == 0) return 0;
  bool peek = flags & MSG_PEEK;
  bool waitall = (flags & MSG_WAITALL) && !peek;
  int rflags = flags & ~(MSG_PEEK | MSG_WAITALL | MSG_TRUNC);
  size_t got = 0;
  for (;;) {
    size_t n = serve(s, iov, cnt, got, want, peek);
    got += n;
    if (!peek) s.app_bytes += n;
    if (got == want) return static_cast<ssize_t>(got);
    // Having bytes, a read goes on only through frames already buffered whole (as the
    // kernel hands out all it holds): never another recv, which could block or fail.
    // recv(1 MiB) of text in 64 KiB writes returned 64 KiB a call, 16x the calls.
    if (got && (!waitall || peek) && (peek || !frame_buffered(s))) return static_cast<ssize_t>(got);
    if (n) continue;
    if (s.raw_left && !peek && in_avail(s) == 0) {
      ssize_t r = recv_direct(s, io, m, fd, iov, cnt, got, want, rflags);
      if (r > 0) {
        got += static_cast<size_t>(r);
        s.app_bytes += static_cast<uint64_t>(r);
        continue;
      }
      if (r < 0) {
        if (s.error || !got) return -1;
        return static_cast<ssize_t>(got);
      }
    }
    const char* why = "";
    Step st = parse(s, &why);
    if (st == Step::Progress) continue;
    if (st == Step::Corrupt) {
      if (!got) return fail(s, why);
      int keep = errno;  // the bytes already handed out stand; the next read fails
      fail(s, why);
      errno = keep;
      return static_cast<ssize_t>(got);
    }
    if (s.in_beg && (s.in_end == kRxInCap || s.in_beg == s.in_end)) {  // make room
      std::memmove(s.in, s.in + s.in_beg, in_avail(s));
      s.in_end -= s.in_beg;
      s.in_beg = 0;
    }
    ssize_t r = metered_recv(io, m, fd, s.in + s.in_end, kRxInCap - s.in_end, rflags);
    if (r > 0) {
      s.in_end += static_cast<size_t>(r);
      s.wire_bytes += static_cast<uint64_t>(r);
      continue;
    }
    if (r == 0) {
      if (in_avail(s) || s.raw_left) return fail(s, "stream ended inside a frame");
      return static_cast<ssize_t>(got);  // clean end of stream
    }
    if (got) return static_cast<ssize_t>(got);
    return -1;
  }
}

}  // namespace bonsai::compress
