// SPDX-License-Identifier: MIT
// The mix of two levels (see tx_mix.h and docs/reference/compression.md, "The mix of two levels").
// why: see docs/notes/compression-measured.md#the-mix-of-two-levels
#include "compress/tx_mix.h"

#include "compress/policy_datarate.h"

namespace bonsai::compress {
namespace {

// Chunks promoted across the two zstd streams go in runs of this many, so that each
// stream's history holds whole windows.
constexpr uint8_t kZstdMixRun = 16;

// The sender's second zstd stream (codec.h), its workspace mapped when first needed.
// @return whether the sender has it.
bool second_zstd_stream(TxStream& s) {
  if (s.codec.nzstd >= 2) return true;
  if (s.codec.nzstd == 0 || s.extra_failed || !s.extra.get) return false;
  size_t n = tx_stream_codec_extra_size(*s.levels, false);  // the 8 MiB window's grows in place
  void* mem = n ? s.extra.get(s.extra.ctx, n) : nullptr;
  if (!mem || !tx_stream_codec_attach(s.codec, mem, n, *s.levels)) s.extra_failed = true;
  return s.codec.nzstd >= 2;
}

// The time a chunk of `len` bytes takes at level `up`: what the last promoted chunks
// took there per byte (tx_promo_measured), else the model's CPU figure
// (calibrated every kResampleNs, corrected by what the stream spends); 0: not known.
double promoted_chunk_ns(const TxStream& s, uint8_t up, size_t len, uint64_t now_ns) {
  if (tx_promo_measured(s, up, now_ns)) return s.promo_ns_byte * static_cast<double>(len);
  const LevelModel& l = s.policy.model.level[up];
  return l.known ? l.cpu_ns_byte * s.policy.model.cpu_gain * static_cast<double>(len) : 0;
}

// Whether level `up` alone leaves the link idle at this cap (CPU-bound): what the last
// promoted chunks took per byte against the link's time for their wire bytes
// (tx_promo_measured), else the model's verdict.
bool up_cpu_bound(const TxStream& s, const WireMeter& m, uint8_t up, uint64_t now_ns) {
  if (tx_promo_measured(s, up, now_ns) && m.rate_bps > 0) return s.promo_ns_byte > s.promo_wire_byte * 1e9 / m.rate_bps;
  return model_cpu_bound(s.policy.model, up);
}

}  // namespace

bool tx_promo_measured(const TxStream& s, unsigned up, uint64_t now_ns) noexcept {
  return s.promo_level == up && s.promo_ns_byte > 0 && now_ns - s.promo_at_ns < kResampleNs;
}

// Whether this chunk is compressed one level above the policy's `lvl`: the sender is
// more than kAheadShare of the bucket's depth ahead of the link (the link binds and the
// CPU has time to spare), and the level above has a codec stream of its own, so chunks
// can alternate between the two levels with both histories intact: lz4 and zstd:1 (two
// codecs), or two zstd levels (the sender's two zstd streams, codec.h; with one, as a
// fixed level has, a change of zstd level starts a new frame: no mix).
// Where the policy's level is link-bound with CPU to spare and the next one CPU-bound
// with link to spare, the two share the link chunk by chunk, as `zstd --adapt`
// alternates levels: promoted chunks spend the lead, plain ones rebuild it, and the
// mix settles where both the CPU and the link are busy, above either level alone.
// Datarate only (a fixed level is fixed).
bool tx_promote_chunk(TxStream& s, const WireMeter& m, uint8_t lvl, double lead, size_t len, uint64_t now_ns) noexcept {
  if (s.policy.cfg.kind != PolicyKind::Datarate || lvl == 0) return false;
  // A probe down from the level above measures the level probed, not a mix with the
  // level it left (which would send most of its chunks back up and read low).
  if (s.policy.dr.probe_from == static_cast<int>(lvl) + 1) {
    s.promo_run = 0;
    return false;
  }
  unsigned up = lvl + 1u;
  if (up >= s.levels->count) return false;
  bool cross = datarate_new_frame(s.policy.dr, lvl, up);
  bool in_run = cross && s.promo_run > 0 && s.promo_level == up;
  double keep = in_run ? 0 : kAheadShare;
  // The chunk must fit in the lead beyond kAheadShare of the depth, or the link idles
  // while it compresses.
  if (lead <= keep ||
      (m.depth_ns > 0 && promoted_chunk_ns(s, static_cast<uint8_t>(up), len, now_ns) > (lead - keep) * m.depth_ns)) {
    s.promo_run = 0;
    return false;
  }
  if (!cross) return true;
  // Two zstd levels: each stream's history then holds only its own chunks, which costs
  // ratio. That can pay only where the level above is CPU-bound; where it alone would
  // keep the link busy, the policy moves to it (with its whole history). And the chunks
  // go up in runs of kZstdMixRun, so that each history holds whole windows. A run goes
  // on while the lead covers the next chunk.
  if (!in_run && !(up_cpu_bound(s, m, static_cast<uint8_t>(up), now_ns) && second_zstd_stream(s))) return false;
  s.promo_run = static_cast<uint8_t>(in_run ? s.promo_run - 1 : kZstdMixRun - 1);
  return true;
}

void tx_promo_note(TxStream& s, uint8_t lvl, uint64_t c0_ns, uint64_t cpu_ns, size_t wire, size_t len) noexcept {
  double per_byte = static_cast<double>(cpu_ns) / static_cast<double>(len);
  double wire_byte = static_cast<double>(wire ? wire : len) / static_cast<double>(len);
  bool again = tx_promo_measured(s, lvl, c0_ns);
  s.promo_ns_byte = again ? 0.75 * s.promo_ns_byte + 0.25 * per_byte : per_byte;
  s.promo_wire_byte = again ? 0.75 * s.promo_wire_byte + 0.25 * wire_byte : wire_byte;
  s.promo_level = lvl;
  s.promo_at_ns = c0_ns;
}

void tx_keep_zstd_history(TxStream& s, Level level) noexcept {
  const ZstdSlot& open = s.codec.zs[0];
  if (level.method == Method::Zstd && s.codec.nzstd == 1 && s.policy.cfg.kind != PolicyKind::Fixed &&
      open.level != 0 && (open.level != level.param || open.ldm != s.codec.want_ldm))
    second_zstd_stream(s);
}

}  // namespace bonsai::compress
