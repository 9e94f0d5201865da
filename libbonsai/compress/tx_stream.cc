// SPDX-License-Identifier: MIT
// The send path of a compressed connection (see tx_stream.h): tx_write cuts the
// application's bytes into chunks and frames each, with the incompressible-data guard.
// Elsewhere: the mix of two levels (tx_mix.cc), the socket and the send buffer
// (tx_send_buffer.cc), the calibration rounds for the datarate policy (tx_calibrate.cc).
#include "compress/tx_stream.h"

#include <cerrno>
#include <cstring>

#include "compress/tx_calibrate.h"
#include "compress/tx_loop_budget.h"
#include "compress/tx_mix.h"
#include "compress/tx_send_buffer.h"
#include "compress/wire_format.h"
#include "log/blog.h"

namespace bonsai::compress {
namespace {

constexpr int kMaxSlices = 64;     // a chunk spread over more iovecs is gathered into `stage`
constexpr uint32_t kMaxSkip = 16;  // an incompressible stream is re-sampled every 16 chunks at least
// A compressed frame that saves less than this (per mille) counts as a miss for the
// incompressible-data guard.
constexpr size_t kMissPerMille = 990;

size_t align64(size_t n) { return (n + 63) & ~size_t{63}; }

// Finds the slices of iov covering bytes [pos, pos+len). @return slice count, or -1 if > max.
int slices_of(const iovec* iov, int cnt, size_t pos, size_t len, iovec* out, int max) {
  int n = 0;
  for (int i = 0; i < cnt && len; ++i) {
    size_t l = iov[i].iov_len;
    if (pos >= l) {
      pos -= l;
      continue;
    }
    if (n == max) return -1;
    size_t take = l - pos < len ? l - pos : len;
    out[n++] = {static_cast<uint8_t*>(iov[i].iov_base) + pos, take};
    len -= take;
    pos = 0;
  }
  return n;
}

// Copies bytes [pos, pos+len) of iov into dst.
void gather(const iovec* iov, int cnt, size_t pos, size_t len, uint8_t* dst) {
  size_t at = 0;
  for (int i = 0; i < cnt && at < len; ++i) {
    size_t l = iov[i].iov_len;
    if (pos >= l) {
      pos -= l;
      continue;
    }
    size_t take = l - pos < len - at ? l - pos : len - at;
    std::memcpy(dst + at, static_cast<uint8_t*>(iov[i].iov_base) + pos, take);
    at += take;
    pos = 0;
  }
}

// A chunk that did not compress: back off (sample 1 chunk in up to kMaxSkip).
void miss(TxStream& s) {
  if (s.skip_streak < 31) ++s.skip_streak;
  uint32_t skip = s.skip_streak >= 5 ? kMaxSkip : (1u << s.skip_streak) - 1;
  s.skip_left = skip > kMaxSkip ? kMaxSkip : skip;
}

// Decides whether to try compressing this chunk (the incompressible-data guard). Where
// the byte cap binds, every byte saved is application data gained and the CPU would
// otherwise wait: every chunk is compressed (lz4's sample cannot tell what zstd gains on
// slightly compressible data). Elsewhere (CPU or socket bound) a 4 KiB lz4 sample must
// shrink by 10% first. why: see docs/notes/compression-measured.md#the-incompressible-data-guard
bool worth_trying(TxStream& s, const void* src, size_t len) {
  // Bound: no back-off either. The CPU would wait anyway, and a chunk sent raw is also
  // missing from the stream's history. If compressing makes the sender CPU-bound, the
  // cap stops binding and the back-off is back.
  if (tx_cap_binds(s)) return true;
  if (s.skip_left) {
    --s.skip_left;
    return false;
  }
  if (stream_sample_compressible(s.codec, src, len, 90)) return true;
  miss(s);
  return false;
}

// Compresses the chunk at `level` as the next frame of the connection's stream.
// @return the payload size (into s.out; *flags for the header), or 0: send it raw.
size_t compress_chunk(TxStream& s, Level level, const void* src, size_t len, uint8_t* flags) {
  size_t c = stream_compress(s.codec, level, src, len, s.out, kMaxFrameWire, flags);
  if (c && c * 1000 < len * kMissPerMille) s.skip_streak = 0;
  else miss(s);  // sent anyway if c > 0: the stream has taken the bytes
  return c;
}

// Decaying sums of a chunk's busy and waiting time (half-life ~8 chunks).
void note_link(TxStream& s, uint64_t busy_ns, uint64_t blocked_ns) {
  s.link_busy_ns = s.link_busy_ns - s.link_busy_ns / 8 + busy_ns;
  s.link_blocked_ns = s.link_blocked_ns - s.link_blocked_ns / 8 + blocked_ns;
}

}  // namespace

size_t tx_stream_size(const LevelList& levels, bool wide) noexcept {
  return align64(kMaxFrameWire) + align64(kMaxFrameRaw) + align64(kPendSize) +
         align64(tx_stream_codec_size(levels, wide));
}

bool tx_stream_init(TxStream& s, void* mem, size_t size, const LevelList* levels,
                    const PolicyConfig& policy) noexcept {
  if (size < tx_stream_size(*levels, false)) return false;
  s = TxStream{};
  auto* base = static_cast<uint8_t*>(mem);
  s.levels = levels;
  s.out = base;
  s.stage = base + align64(kMaxFrameWire);
  s.pend = s.stage + align64(kMaxFrameRaw);
  policy_init(s.policy, policy, levels->count);
  datarate_levels(s.policy.dr, *levels);
  size_t used = align64(kMaxFrameWire) + align64(kMaxFrameRaw) + align64(kPendSize);
  return tx_stream_codec_init(s.codec, base + used, size - used, *levels);
}

ssize_t tx_write(TxStream& s, const IoOps& io, const WireMeter& m, int fd, const iovec* iov, int cnt,
                 int flags) noexcept {
  if (s.broken) {
    errno = s.broken;
    return -1;
  }
  size_t total = iov_sum(iov, cnt);
  bool nonblocking = flags & MSG_DONTWAIT;
  uint64_t t0 = io.now_ns();
  // Time the send buffer's flush waited counts for the first chunk (the policy's rate).
  uint64_t flush_blocked = 0;
  if (s.full_since) {
    // A non-blocking sender waited for the socket outside the library since it left
    // it full: that wait is the link's, as a blocking sender's would be (at most 1 s
    // of it: an idle application is not waiting for the link).
    uint64_t waited = t0 - s.full_since;
    if (waited < 1000000000u) {
      flush_blocked = waited;
      t0 = s.full_since;
    }
    s.full_since = 0;
  }
  if (tx_pending(s)) {
    int e = tx_flush_pending(s, io, m, fd, flags, &flush_blocked);
    if (e) {  // EAGAIN: nothing taken, the buffer is still full
      if (e == EAGAIN) s.full_since = t0;
      if (e == EAGAIN && total == 0) return 0;  // as the kernel answers an empty write
      errno = e;
      return -1;
    }
  }
  if (total == 0) return 0;
  if (!s.header_sent && m.capped) policy_capped_start(s.policy, m.rate_bps);
  policy_cap_rate(s.policy, m.capped ? m.rate_bps : 0);
  // A non-blocking call shares its thread with every descriptor the loop serves: an
  // adaptive policy's level is capped by the thread's budget of one chunk
  // (tx_loop_budget.h). A fixed level is the user's choice: kept.
  LoopBudget* loop = nonblocking && s.policy.cfg.kind != PolicyKind::Fixed ? m.loop : nullptr;
  size_t pos = 0;
  while (pos < total) {
    size_t len = total - pos < kMaxFrameRaw ? total - pos : kMaxFrameRaw;
    if (pos) t0 = io.now_ns();
    // A call that must not wait asks the bucket before a chunk is compressed (a chunk
    // taken into the stream cannot be given back): refused, the call takes nothing more
    // (EAGAIN if nothing), and its descriptor waits for its turn (runtime/pace.h). The
    // time until the next write counts as the link's, as a full socket's does.
    if (nonblocking && m.nowait && m.allow(m.ctx, len) == 0) {
      if (!s.full_since) s.full_since = t0;
      if (pos) return static_cast<ssize_t>(pos);
      errno = EAGAIN;
      return -1;
    }
    double lead = m.ahead ? m.ahead(m.ctx) : -1;  // in bucket depths; -1: not known
    // An event loop's connections calibrate within the thread's share for it, but for
    // their first round (the policy's model starts from it: without it only `none` is
    // known).
    bool sample =
        tx_wants_calibration(s, len, t0, lead) && (!loop || !s.cal_paired || loop_may_calibrate(*loop, t0));
    double budget = loop ? loop_budget_chunk_ns(*loop) : 0;
    iovec v[kMaxSlices + 2];
    int nv = 0;
    uint8_t shdr[kStreamHeaderSize];
    uint8_t fhdr[kFrameHeaderSize];
    if (!s.header_sent) {
      stream_header_write(shdr);
      v[nv++] = {shdr, sizeof shdr};
    }
    v[nv++] = {fhdr, sizeof fhdr};
    iovec* payload = v + nv;
    int ns = slices_of(iov, cnt, pos, len, payload, kMaxSlices);
    uint8_t lvl = s.policy.level;
    Level level = s.levels->levels[lvl];
    FrameHeader h{Method::Raw, static_cast<uint32_t>(len), static_cast<uint32_t>(len)};
    bool try_it = level.method != Method::Raw && len >= kSmallWrite;
    if (ns < 0 || ((try_it || sample) && ns > 1)) {  // gather the chunk into one buffer
      gather(iov, cnt, pos, len, s.stage);
      payload[0] = {s.stage, len};
      ns = 1;
    }
    // Calibration stays in the chunk's time, counted as time not spent on the chunk
    // (with the waits): the bucket refills meanwhile (up to its depth), so leaving it out
    // makes the next chunks' waits look short and the period's rate high.
    // why: see docs/notes/compression-measured.md#calibration-in-the-chunks-time
    uint64_t cal_ns = 0;
    if (sample) {
      uint64_t c0 = io.now_ns();
      tx_calibrate(s, io, payload[0].iov_base, len, budget);
      cal_ns = io.now_ns() - c0;
      // The first round may have picked the level already (the cap's rate known).
      lvl = s.policy.level;
      level = s.levels->levels[lvl];
      try_it = level.method != Method::Raw && len >= kSmallWrite;
    }
    bool promoted = false;
    uint8_t policy_lvl = lvl;
    // The loop's budget: the highest level whose chunk fits it (the mix promotes only
    // below it). A chunk run lower than the policy's level is reported as not that
    // level's (`promoted`: a mix), so the model's corrections stay that level's.
    uint8_t top = loop ? loop_level_cap(s.policy.model, static_cast<uint8_t>(s.levels->count - 1), len, budget)
                       : static_cast<uint8_t>(s.levels->count - 1);
    bool demoted = lvl > top;
    if (demoted) {
      lvl = top;
      level = s.levels->levels[lvl];
      try_it = level.method != Method::Raw && len >= kSmallWrite;
    }
    if (try_it && lvl < top && tx_promote_chunk(s, m, lvl, lead, len, t0)) {
      lvl = static_cast<uint8_t>(lvl + 1);
      level = s.levels->levels[lvl];
      promoted = true;
    }
    uint64_t cpu_ns = 0;
    if (try_it) tx_keep_zstd_history(s, level);
    if (try_it && worth_trying(s, payload[0].iov_base, len)) {
      uint64_t c0 = io.now_ns();
      size_t c = compress_chunk(s, level, payload[0].iov_base, len, &h.flags);
      cpu_ns = io.now_ns() - c0;
      if (promoted) tx_promo_note(s, lvl, c0, cpu_ns, c, len);  // for the next promotions
      if (c) {
        h.method = level.method;
        h.wire_len = static_cast<uint32_t>(c);
        payload[0] = {s.out, c};
        ns = 1;
      } else {
        h.flags = 0;
      }
    }
    frame_header_write(fhdr, h);
    nv += ns;
    uint64_t blocked = flush_blocked + cal_ns;
    flush_blocked = 0;
    int err = tx_send_all(io, m, fd, v, nv, flags, &blocked);
    bool kept = false;
    if (err == EAGAIN && nonblocking) {  // the socket is full: the rest waits in the send buffer
      tx_keep_rest(s, v, nv);
      kept = true;
      err = 0;
    }
    if (err) {
      // A failed send may have left part of a frame on the wire: the stream is over.
      s.broken = err;
      if (pos) return static_cast<ssize_t>(pos);
      errno = err;
      return -1;
    }
    uint64_t wire = (s.header_sent ? 0 : kStreamHeaderSize) + kFrameHeaderSize + h.wire_len;
    s.wire_bytes += wire;
    s.header_sent = true;
    s.app_bytes += len;
    s.frames[static_cast<unsigned>(h.method)]++;
    s.level_chunks[lvl]++;
    uint64_t t1 = io.now_ns();
    if (loop && loop_budget_note(*loop, t1, cpu_ns, cal_ns) && blog_enabled(LogLevel::Debug))
      blog(LogLevel::Debug,
           "compression: thread budget %.2f ms a chunk (compressing %.0f%% of its time, calibrating %.0f%%; fd %d at "
           "%u of %u)",
           loop->chunk_ns / 1e6, 100 * loop->share, 100 * loop->cal_share, fd, lvl, policy_lvl);
    note_link(s, t1 - t0 - cal_ns, blocked - cal_ns);  // the link's state: without calibration
    s.last_waited = blocked > cal_ns;
    // What the mix measured of the level above the policy's: its CPU ceiling (probes
    // of it are judged by it, policy_datarate.cc worth_probing).
    s.policy.dr.up_cpu_rate = tx_promo_measured(s, policy_lvl + 1u, t1) ? 1e9 / s.promo_ns_byte : 0;
    uint8_t next =
        policy_on_chunk(s.policy, ChunkReport{t1, len, wire, t1 - t0, blocked, cpu_ns, promoted || demoted});
    if (next != policy_lvl && blog_enabled(LogLevel::Debug)) {
      // The period that decided: its wire rate, and its shares of waiting (bucket, full
      // socket, calibration) and of compressing; bound: it counted as link-bound.
      const PeriodMeasure& p = s.policy.dr.period;
      double busy = p.busy_ns ? static_cast<double>(p.busy_ns) : 1;
      blog(LogLevel::Debug,
           "compression: fd %d level %u -> %u (last rate %.1f MiB/s, link %.1f MiB/s; period wire %.1f MiB/s, "
           "waited %.0f%%, compressing %.0f%%, bound %d)",
           fd, policy_lvl, next, s.policy.dr.pdr / 1048576.0, s.policy.model.wire_bps / 1048576.0,
           static_cast<double>(p.wire) * 1e9 / busy / 1048576.0, 100.0 * static_cast<double>(p.blocked_ns) / busy,
           100.0 * static_cast<double>(p.cpu_ns) / busy, s.policy.dr.bound ? 1 : 0);
    }
    pos += len;
    if (kept) {
      s.full_since = t1;
      break;
    }
    // Under a byte cap a non-blocking call takes one chunk (a short count, as the
    // limiter's clamp of non-blocking calls gives): its waits in the bucket stay
    // within one frame or two (the buffer's, then its own).
    if (nonblocking && m.allow) break;
  }
  return static_cast<ssize_t>(pos);
}

}  // namespace bonsai::compress