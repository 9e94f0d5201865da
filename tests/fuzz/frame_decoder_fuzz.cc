// SPDX-License-Identifier: MIT
// libFuzzer target for the compressed-stream decoder (rx_stream): arbitrary wire
// bytes, delivered in arbitrary pieces and read with arbitrary sizes, must decode
// or fail with ECONNRESET; never crash, hang or read out of bounds. What is handed
// out is always a prefix of what the whole, valid frames decode to (a reference
// decode frame by frame, with its own codec state): never a byte of a truncated or
// corrupt frame. Wire v1 to v4 (streams with history; v3: two zstd streams, v4: 8 MiB windows); to
// reach deep into the streams, an input may also be an XOR mask over a valid v4 stream
// of lz4 and zstd frames (new-stream and continuation frames, level changes, frames of
// the second zstd stream).
// Build: make fuzz (clang-14); `make test-fuzz` runs it for FUZZ_SECONDS (30).
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "compress/rx_stream.h"
#include "compress/wire_format.h"

using namespace bonsai::compress;

namespace {
const uint8_t* g_src;
size_t g_left;
size_t g_piece;

ssize_t fuzz_recv(int, void* b, size_t n, int) {
  size_t k = n < g_left ? n : g_left;
  if (k > g_piece) k = g_piece;
  std::memcpy(b, g_src, k);
  g_src += k;
  g_left -= k;
  return static_cast<ssize_t>(k);
}
ssize_t no_sendmsg(int, const msghdr*, int) { return -1; }
int no_poll(pollfd*, nfds_t, int) { return 0; }
uint64_t zero_ns() { return 0; }

void* g_mem;
void* g_ref_mem;
uint8_t g_wire[1 << 20];
uint8_t g_buf[1 << 18];
constexpr size_t kRefCap = 4 << 20;  // bytes of reference output compared at most
uint8_t g_ref[kRefCap + kMaxFrameRaw];

uint8_t g_valid[1 << 19];  // a valid v4 stream (built once)
size_t g_valid_len, g_valid_raw;

// The second zstd stream's decoder block for the stream under test (ExtraMem), and the
// 8 MiB decoders (ExtraMem::wide), one per zstd stream, for it and for the reference.
void* g_extra;
void* g_wide[kZstdStreams];
void* g_ref_wide[kZstdStreams];
void* extra_get(void* ctx, size_t n) { return n <= rx_codec_extra_size() ? *static_cast<void**>(ctx) : nullptr; }
void* wide_get(void*, int stream, size_t n) {
  return stream >= 0 && stream < kZstdStreams && n <= rx_codec_wide_size() ? g_wide[stream] : nullptr;
}

// Encodes some text-like bytes as a v4 stream: lz4 and zstd frames at several levels
// on both zstd streams, of several sizes, with raw frames between.
void build_valid() {
  LevelList l = levels_default();
  size_t sz = tx_stream_codec_size(l), sz2 = tx_stream_codec_extra_size(l);
  void* mem = std::aligned_alloc(64, (sz + 63) / 64 * 64);
  void* mem2 = std::aligned_alloc(64, (sz2 + 63) / 64 * 64);
  TxStreamCodec c{};
  if (!tx_stream_codec_init(c, mem, sz, l) || !tx_stream_codec_attach(c, mem2, sz2, l)) abort();
  static uint8_t src[1 << 17], out[kMaxFrameWire];
  uint32_t x = 1;
  for (size_t i = 0; i < sizeof src; ++i) {
    x = x * 1103515245 + 12345;
    src[i] = static_cast<uint8_t>("the bonsai limits socket frames "[(x >> 16) % 32]);
  }
  stream_header_write(g_valid);
  size_t at = kStreamHeaderSize, pos = 0;
  static const uint8_t kLevels[] = {1, 1, 2, 2, 3, 0, 1, 3, 4, 2, 5, 1, 3, 4, 3, 4, 4};
  static const uint32_t kSizes[] = {100, 2000, 70, 9000, 40000, 300, 1, 5000, 65536, 700, 3000, 20000, 8000, 900, 30000, 4000, 100};
  for (size_t k = 0; k < sizeof kLevels; ++k) {
    uint32_t n = kSizes[k];
    if (k == 9) c.zstd_bytes = kZstdWidenAfter;  // the frames after this widen to 8 MiB, as past 2 MiB
    if (pos + n > sizeof src) pos = 0;
    FrameHeader h{Method::Raw, n, n};
    const uint8_t* payload = src + pos;
    if (kLevels[k]) {
      size_t w = stream_compress(c, l.levels[kLevels[k]], src + pos, n, out, sizeof out, &h.flags);
      if (w) h.method = l.levels[kLevels[k]].method, h.wire_len = static_cast<uint32_t>(w), payload = out;
      else h.flags = 0;
    }
    frame_header_write(g_valid + at, h);
    std::memcpy(g_valid + at + kFrameHeaderSize, payload, h.wire_len);
    at += kFrameHeaderSize + h.wire_len;
    pos += n;
  }
  g_valid_len = at;
  g_valid_raw = 0;
  for (uint32_t n : kSizes) g_valid_raw += n;
  std::free(mem);
  std::free(mem2);
}

// Decodes the whole valid frames of wire[0..n) into g_ref. @return bytes (<= kRefCap:
// *capped set if there was more).
size_t reference(const uint8_t* w, size_t n, bool* capped) {
  *capped = false;
  if (n < kStreamHeaderSize || stream_header_match(w, n) != HeaderMatch::Yes) return 0;
  RxCodec codec{};
  // The reference holds 8 MiB windows on both zstd streams from the start: it decodes
  // what any valid stream carries (rx_stream maps them as frames ask).
  if (!rx_codec_init(codec, g_ref_mem, rx_codec_size()) || !rx_codec_widen(codec, 0, g_ref_wide[0], rx_codec_wide_size()) ||
      !rx_codec_widen(codec, 1, g_ref_wide[1], rx_codec_wide_size()))
    abort();
  uint8_t version = w[7];
  rx_codec_set_version(codec, version);  // as rx_stream does: the version bounds the window
  static uint8_t dec[kMaxFrameRaw];
  size_t at = kStreamHeaderSize, out = 0;
  while (n - at >= kFrameHeaderSize) {
    FrameHeader h;
    if (!frame_header_parse(w + at, h, version) || n - at - kFrameHeaderSize < h.wire_len) break;
    const uint8_t* pl = w + at + kFrameHeaderSize;
    if (h.method == Method::Raw) {
      std::memcpy(g_ref + out, pl, h.raw_len);
    } else if (version == kWireVersionOld) {
      if (!codec_decompress(codec, h.method, pl, h.wire_len, g_ref + out, h.raw_len)) break;
    } else {
      const uint8_t* d = codec_decompress_stream(codec, h.method, h.flags, pl, h.wire_len, dec, h.raw_len);
      if (!d) break;
      std::memcpy(g_ref + out, d, h.raw_len);
    }
    out += h.raw_len;
    at += kFrameHeaderSize + h.wire_len;
    if (out >= kRefCap) {
      *capped = true;
      return kRefCap;
    }
  }
  return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  if (!g_mem) g_mem = std::aligned_alloc(64, (rx_stream_size() + 63) / 64 * 64);
  if (!g_ref_mem) g_ref_mem = std::aligned_alloc(64, (rx_codec_size() + 63) / 64 * 64);
  if (!g_extra) g_extra = std::aligned_alloc(64, (rx_codec_extra_size() + 63) / 64 * 64);
  for (int i = 0; i < kZstdStreams; ++i) {
    if (!g_wide[i]) g_wide[i] = std::aligned_alloc(64, (rx_codec_wide_size() + 63) / 64 * 64);
    if (!g_ref_wide[i]) g_ref_wide[i] = std::aligned_alloc(64, (rx_codec_wide_size() + 63) / 64 * 64);
  }
  if (!g_valid_len) {
    build_valid();
    bool capped;
    if (reference(g_valid, g_valid_len, &capped) != g_valid_raw) abort();  // the seed stream is valid
  }
  RxStream s{};
  if (!rx_stream_init(s, g_mem, rx_stream_size())) abort();
  s.extra = ExtraMem{extra_get, &g_extra, wide_get};
  // Byte 0: piece size; byte 1: read size; byte 2 bit 0: prepend a valid stream header
  // (so that the fuzzer reaches the frames quickly), bit 1: of version 1, bit 3: of
  // version 2, bit 4: of version 3 (else 4); bit 2: the rest is an XOR mask over a
  // valid v4 stream (cut to its length).
  g_piece = 1 + size_t{data[0]} * 67;
  size_t read_size = 1 + size_t{data[1]} * 1021;
  size_t n = 0, body;
  if (data[2] & 4) {
    body = size - 3 < g_valid_len ? size - 3 : g_valid_len;
    for (size_t i = 0; i < body; ++i) g_wire[i] = g_valid[i] ^ data[3 + i];
  } else {
    if (data[2] & 1) {
      stream_header_write(g_wire, data[2] & 2    ? kWireVersionOld
                                  : data[2] & 8  ? kWireVersionOne
                                  : data[2] & 16 ? kWireVersionNarrow
                                                 : kWireVersion);
      n = kStreamHeaderSize;
    }
    body = size - 3 < sizeof g_wire - n ? size - 3 : sizeof g_wire - n;
    std::memcpy(g_wire + n, data + 3, body);
  }
  g_src = g_wire;
  g_left = n + body;
  bool capped;
  size_t ref_len = reference(g_wire, n + body, &capped);
  size_t out = 0;
  const IoOps io{no_sendmsg, fuzz_recv, no_poll, zero_ns};
  const WireMeter m{nullptr, nullptr, nullptr};
  for (int i = 0; i < 100000; ++i) {
    iovec v{g_buf, read_size < sizeof g_buf ? read_size : sizeof g_buf};
    ssize_t r = rx_read(s, io, m, -1, &v, 1, 0);
    if (r < 0) {
      if (errno != ECONNRESET) abort();
      break;
    }
    if (r == 0) {
      if (!capped && out != ref_len) abort();  // a clean end hands out every whole frame
      break;
    }
    if (static_cast<size_t>(r) > v.iov_len) abort();
    size_t k = static_cast<size_t>(r);
    if (out + k > ref_len && !capped) abort();  // more than the whole frames hold
    size_t cmp = out + k <= kRefCap ? k : kRefCap - out;
    if (std::memcmp(g_buf, g_ref + out, cmp) != 0) abort();
    out += k;
    if (out >= kRefCap) break;
  }
  return 0;
}
