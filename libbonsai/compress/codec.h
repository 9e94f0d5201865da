// SPDX-License-Identifier: MIT
// Compression levels (none, lz4, zstd:N) and the codecs behind them, on fixed
// workspaces: after *_init nothing allocates (zstd static contexts, lz4 extState and
// streams). Two kinds: one-shot (wire v1 frames, calibration, the sampler) and
// streaming (wire v2: each connection keeps a window across frames, so small writes
// compress like one stream). Pure: no I/O. libzstd/liblz4 are linked dynamically.
// Encoders: codec_encode.cc; decoders: codec_decode.cc; the tables (default levels,
// each zstd level's stream parameters): codec_params.h.
#pragma once
#include <cstddef>
#include <cstdint>

#include "compress/wire_format.h"

namespace bonsai::compress {

struct Level {
  Method method;  // Raw means "none"
  int8_t param;   // zstd level; unused otherwise
};

inline constexpr size_t kMaxLevels = 8;

struct LevelList {
  Level levels[kMaxLevels];
  uint8_t count;
};

// The default list (codec_params.h kDefaultLevels): none, lz4, zstd:1, zstd:3, zstd:5,
// zstd:6, zstd:9: zstd:5 and zstd:6 fill the gap where zstd:3 waits for a cap's bucket
// and zstd:9 is CPU-bound. why: see docs/notes/compression-measured.md#the-default-level-list
LevelList levels_default() noexcept;

// Parses "none,lz4,zstd:1,zstd:3,zstd:9" (order kept; must be ordered by cost;
// "none" is added in front when missing). @return nullptr, or what is wrong.
const char* levels_parse(const char* text, LevelList& out) noexcept;

// Writes "none", "lz4" or "zstd:N" into buf (>= 12 bytes). @return buf.
const char* level_name(Level l, char* buf, size_t cap) noexcept;

// ---- Sender side ----
struct TxCodec {
  void* lz4_state;
  void* cctx;  // ZSTD_CCtx*, or nullptr if no zstd level
  int max_zstd;
};

// Workspace bytes a sender needs for `levels` (chunks up to kMaxFrameRaw).
size_t tx_codec_size(const LevelList& levels) noexcept;
// Lays the codec out in `mem` (tx_codec_size bytes, 16-aligned). @return success.
bool tx_codec_init(TxCodec& c, void* mem, size_t size, const LevelList& levels) noexcept;

// Compresses src[0..n) at `level` into dst (cap >= n).
// @return compressed size, or 0 if it failed or would not be smaller than n.
size_t codec_compress(TxCodec& c, Level level, const void* src, size_t n, void* dst, size_t cap) noexcept;

// AdOC/BlobSeer guard: runs a ~4 KiB sample of src through lz4.
// @return true if the sample shrinks enough for compression to be worth trying.
bool codec_sample_compressible(TxCodec& c, const void* src, size_t n) noexcept;

// ---- Streaming (wire v2 and later) ----
// zstd's window: 8 MiB (wire v4), what `zstd --adapt` uses whatever its level. A window
// costs memory only as a connection fills it (pages are touched as data goes through).
// The match tables are capped, which bounds a sender's context: the hash table at 2^18
// entries (levels from zstd:5 up would make 2^19-2^21), the chain table at 2^17
// (zstd:3 keeps its own 2^17/2^16). Memory per connection: docs/reference/compression.md.
// why: see docs/notes/compression-measured.md#the-zstd-window-and-match-tables
inline constexpr int kZstdWindowLog = kZstdWindowLogMax;
// A connection's zstd frames start with a 2 MiB window (wire v3's), so a receiver maps
// a decoder for 2 MiB only; once zstd has taken this much of the connection's data (the
// narrow window is full: older data starts to fall out of it), each zstd stream's next
// chunk starts a new frame with the 8 MiB window, once. Short connections (most) thus
// cost a receiver 3.0 MiB, long ones 9.0 (its decoder grown in place: ExtraMem::wide);
// a sender's zstd context grows in place likewise (ZstdRoomGrow): 5.1 MiB and 11.1.
inline constexpr size_t kZstdWidenAfter = size_t{1} << kZstdWindowLogNarrow;
inline constexpr unsigned kZstdHashLog = 18;
inline constexpr unsigned kZstdChainLog = 17;
// Long-distance matching (zstd's LDM), for data that barely compresses (see
// stream_long_matches): a rolling hash over the whole window finds repeats of 256 bytes
// or more that the capped match tables have lost. It slows text down, so it stays off
// there. A 2^11-entry table: 23 KiB with its sequence store.
// why: see docs/notes/compression-measured.md#long-distance-matching
inline constexpr unsigned kLdmHashLog = 11;
inline constexpr unsigned kLdmMinMatch = 256;
inline constexpr unsigned kLdmBucketLog = 3;
// lz4's history ring, the same on both sides (LZ4's "synchronized" ring mode). A frame
// that does not fit at the end goes to the start; it must not overlap the 64 KiB of
// history before the wrap (the encoder reads that history while compressing it), so
// the ring holds 64 KiB + two whole frames.
inline constexpr size_t kLz4Ring = 64 * 1024 + 2 * kMaxFrameRaw + 64;

// A sender's zstd streams (kFlagZstd2, wire v3): up to two, each at its own level with
// its own history, so chunks can go out at either level (the mix of two levels in
// tx_mix.cc, a probe of a level and back) without a new frame, which a change of
// level inside one single-threaded zstd stream would need. A chunk goes to the stream
// open at its level; else the one unused longest starts a new frame at that level.
// The second stream's workspace is given later (tx_stream_codec_attach), when first
// needed: most connections never change level.
inline constexpr int kZstdStreams = 2;

struct ZstdSlot {
  void* zcs;      // ZSTD_CCtx* (static, streaming)
  void* base;     // its workspace: `room` bytes, which ZstdRoomGrow may extend in place
  size_t room;
  bool narrow_only;  // its workspace could not grow to the 8 MiB window: 2 MiB frames only
  int level;      // level of its open zstd frame; 0: none (its next frame starts one)
  bool ldm;       // the open frame's long-distance matching
  bool wide;      // the open frame's window is 8 MiB (else 2 MiB: kZstdWidenAfter)
  uint64_t used;  // when it last took a chunk (the codec's chunk count)
};

// Extends a zstd stream's workspace in place (the same address) to `n` bytes from
// `base`: a sender's workspaces are mapped for the 2 MiB window, with address space
// reserved after them for the 8 MiB one, which a connection commits only when it
// widens (kZstdWidenAfter): short connections map ~5 MiB, not 11. fn null, or false
// (the memory cap, no reservation): that stream keeps 2 MiB frames.
struct ZstdRoomGrow {
  bool (*fn)(void* ctx, void* base, size_t n) = nullptr;
  void* ctx = nullptr;
};

struct TxStreamCodec {
  ZstdSlot zs[kZstdStreams];
  ZstdRoomGrow grow;  // set after tx_stream_codec_init (which clears it)
  size_t wide_room;   // a zstd stream's workspace for the 8 MiB window
  int nzstd;       // zstd streams with a workspace: 0 (no zstd level), 1 or 2
  int max_zstd;
  uint64_t zstd_chunks;  // chunks compressed with zstd (the slots' clock)
  uint64_t zstd_bytes;   // bytes zstd has taken (kZstdWidenAfter)
  bool want_ldm;   // the next frames' (stream_long_matches)
  bool ldm_failed; // a frame with it failed: never again on this stream
  void* lz4;       // LZ4_stream_t*
  void* lz4_sample;  // LZ4 extState for the sampler (never touches the stream)
  uint8_t* lz4_ring;
  size_t lz4_pos;
  bool lz4_open;
};

// The sending codec's workspace: with the first zstd stream's room last, for the 8 MiB
// window (`wide`) or the 2 MiB one (the rest comes from ZstdRoomGrow, in place).
size_t tx_stream_codec_size(const LevelList& levels, bool wide = true) noexcept;
// `size` at least tx_stream_codec_size(levels, false); all past the lz4 parts is the
// first zstd stream's room.
bool tx_stream_codec_init(TxStreamCodec& c, void* mem, size_t size, const LevelList& levels) noexcept;
// The second zstd stream's workspace (0: the list has fewer than two zstd levels).
size_t tx_stream_codec_extra_size(const LevelList& levels, bool wide = true) noexcept;
// Gives the second zstd stream its workspace (16-aligned, at least the narrow size:
// the wide one, or ZstdRoomGrow, for the 8 MiB window). @return success.
bool tx_stream_codec_attach(TxStreamCodec& c, void* mem, size_t size, const LevelList& levels) noexcept;
// Whether a chunk at zstd level `level` would start a new zstd frame (no stream is open
// at it with the long-distance matching and the window the next frames want).
bool stream_zstd_new_frame(const TxStreamCodec& c, int level) noexcept;

// Compresses src[0..n) at `level` as the next frame of that codec's stream, into dst
// (cap >= frame_wire_bound(n)); sets kFlagNewStream in *flags if the frame starts a
// new stream (the first one, or zstd at a level no zstd stream is open at:
// single-threaded zstd cannot change level inside a frame, so the history of the
// stream restarted is dropped), kFlagZstd2 if it goes to the second zstd stream. The
// result may be larger than n (it must be sent: the stream has taken the bytes).
// @return payload size, or 0 if it failed (the stream is reset: send the chunk raw).
size_t stream_compress(TxStreamCodec& c, Level level, const void* src, size_t n, void* dst, size_t cap,
                       uint8_t* flags) noexcept;

// Long-distance matching for the next zstd frames: on or off. A change starts a new
// frame (history dropped), as a change of level does.
inline void stream_long_matches(TxStreamCodec& c, bool on) noexcept { c.want_ldm = on && !c.ldm_failed; }

// The sampler on the streaming codec's own lz4 state: does a ~4 KiB sample of src
// shrink below `keep_pct` percent?
bool stream_sample_compressible(TxStreamCodec& c, const void* src, size_t n, unsigned keep_pct) noexcept;

// ---- Receiver side ----
// One per connection, for v1 (one-shot) and v2 (streaming) frames alike.
struct RxCodec {
  // ZSTD_DCtx* (static, streaming; v1 frames use the first one-shot); the second is
  // attached when a frame of the second zstd stream first arrives (rx_codec_attach).
  void* dctx[kZstdStreams];
  void* zbase[kZstdStreams];  // each decoder's workspace (the pool grows it in place to widen)
  bool zstd_open[kZstdStreams];
  bool wide[kZstdStreams];  // the decoder holds an 8 MiB window (rx_codec_widen); else 2 MiB
  void* lz4d;  // LZ4_streamDecode_t*
  uint8_t* lz4_ring;
  size_t lz4_pos;
  bool lz4_open;
  int window_log_max;  // the largest zstd window the stream's version allows
};

// Decoders start with room for a 2 MiB window (what a sender's first frames ask,
// kZstdWidenAfter), the first one's last in the workspace; a zstd stream whose new
// frame asks for more gets an 8 MiB decoder (rx_codec_widen) in a workspace it is
// given: the pool gives its own, grown in place (ExtraMem::wide). rx_codec_set_version
// bounds a stream's window by its version.
size_t rx_codec_size() noexcept;
bool rx_codec_init(RxCodec& c, void* mem, size_t size) noexcept;
// The stream's version is known (its header): zstd frames asking for a larger window
// than zstd_window_log_max(version) are refused from now on.
void rx_codec_set_version(RxCodec& c, uint8_t version) noexcept;
// The second zstd stream's decoder workspace (2 MiB window).
size_t rx_codec_extra_size() noexcept;
bool rx_codec_attach(RxCodec& c, void* mem, size_t size) noexcept;
// A decoder workspace for an 8 MiB window, and zstd stream `stream` (0 or 1) moved to
// it (call at a new zstd frame: no history is needed). @return success.
size_t rx_codec_wide_size() noexcept;
bool rx_codec_widen(RxCodec& c, int stream, void* mem, size_t size) noexcept;
// The window a zstd frame header at src[0..n) asks for; 0 if there is none to read.
uint64_t zstd_frame_window(const void* src, size_t n) noexcept;

// Decodes a payload of `method` into exactly raw_len bytes at dst.
// @return true on success; false on any corruption (dst contents then undefined).
bool codec_decompress(RxCodec& c, Method method, const void* src, size_t wire_len, void* dst,
                      size_t raw_len) noexcept;

// Decodes a v2 frame's payload (a compressed method) into exactly raw_len bytes,
// continuing the connection's stream (zstd: the second one with kFlagZstd2, which must
// be attached): zstd into dst (>= raw_len bytes), lz4 into its
// ring. @return where the raw_len decoded bytes are, or nullptr on any corruption
// (then the stream needs kFlagNewStream to go on: in practice the connection is reset).
const uint8_t* codec_decompress_stream(RxCodec& c, Method method, uint8_t flags, const void* src, size_t wire_len,
                                       uint8_t* dst, size_t raw_len) noexcept;

}  // namespace bonsai::compress
