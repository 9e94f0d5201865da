// SPDX-License-Identifier: MIT
// Sending half of a compressed connection (see tx_stream.h): the incompressible-data
// guard, the mix and the send buffer, which act on one chunk inside tx_write. The
// calibration rounds for the datarate policy's model: tx_calibrate.cc.
#include "compress/tx_stream.h"

#include <cerrno>
#include <cstring>

#include "compress/tx_calibrate.h"
#include "compress/wire_format.h"
#include "log/blog.h"

namespace bonsai::compress {
namespace {

constexpr int kMaxSlices = 64;     // a chunk spread over more iovecs is gathered into `stage`
constexpr uint32_t kMaxSkip = 16;  // an incompressible stream is re-sampled every 16 chunks at least
// A compressed frame that saves less than this (per mille) counts as a miss for the
// incompressible-data guard.
constexpr size_t kMissPerMille = 990;
// Chunks promoted across the two zstd streams go in runs of this many (2 MiB: wire v3's
// window, where runs of 16 gained over single chunks; not re-measured with 8 MiB).
constexpr uint8_t kZstdMixRun = 16;

size_t align64(size_t n) { return (n + 63) & ~size_t{63}; }

// Sends all of v[0..cnt) (modified in place: what is left unsent). Adds time spent
// waiting to *blocked. With MSG_DONTWAIT in flags it stops when the socket is full.
// @return 0, EAGAIN (MSG_DONTWAIT only), or an errno.
int send_all(const IoOps& io, const WireMeter& m, int fd, iovec* v, int cnt, int flags, uint64_t* blocked) {
  int first = 0;
  while (first < cnt) {
    if (v[first].iov_len == 0) {
      ++first;
      continue;
    }
    size_t want = iov_sum(v + first, cnt - first);
    size_t allow = want;
    if (m.allow) {
      uint64_t t0 = io.now_ns();
      allow = m.allow(m.ctx, want);
      *blocked += io.now_ns() - t0;
      if (allow == 0 || allow > want) allow = want;
    }
    // Trim the vector to `allow` bytes for this call.
    int n = 0;
    size_t sum = 0;
    iovec saved{};
    int last = first;
    for (; last < cnt && sum < allow; ++last, ++n) sum += v[last].iov_len;
    --last;
    size_t cut = sum - allow;
    if (cut) {
      saved = v[last];
      v[last].iov_len -= cut;
    }
    msghdr msg{};
    msg.msg_iov = v + first;
    msg.msg_iovlen = static_cast<size_t>(n);
    ssize_t r = io.sendmsg(fd, &msg, flags);
    if (cut) v[last] = saved;
    if (m.charge) m.charge(m.ctx, r);
    if (r < 0) {
      int e = errno;
      if (e == EINTR) continue;
      if (e == EAGAIN || e == EWOULDBLOCK) {
        if (flags & MSG_DONTWAIT) return EAGAIN;  // the caller keeps the rest (send buffer)
        // A blocking write meeting a socket made non-blocking under it: wait.
        pollfd p{fd, POLLOUT, 0};
        uint64_t t0 = io.now_ns();
        io.poll(&p, 1, 1000);
        *blocked += io.now_ns() - t0;
        continue;
      }
      return e;
    }
    auto left = static_cast<size_t>(r);
    while (left && first < cnt) {
      size_t take = left < v[first].iov_len ? left : v[first].iov_len;
      v[first].iov_base = static_cast<uint8_t*>(v[first].iov_base) + take;
      v[first].iov_len -= take;
      left -= take;
      if (v[first].iov_len == 0) ++first;
    }
  }
  return 0;
}

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
// otherwise wait: every chunk is compressed (data zstd shrinks by 11% is compressed,
// though lz4's sample of it barely shrinks).
// Elsewhere (CPU or socket bound) a 4 KiB lz4 sample must shrink by 10% first.
bool worth_trying(TxStream& s, const void* src, size_t len) {
  // Bound: no back-off either. The CPU would wait anyway, and a chunk sent raw is also
  // missing from the stream's history: on the LOW set (.gz files, 9% saved by matches
  // across files) skipping the chunks that saved <1% lost most of the gain. If
  // compressing makes the sender CPU-bound, the cap stops binding and the back-off is
  // back.
  if (tx_cap_binds(s)) return true;
  if (s.skip_left) {
    --s.skip_left;
    return false;
  }
  if (stream_sample_compressible(s.codec, src, len, 90)) return true;
  miss(s);
  return false;
}

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

// Before a chunk at another zstd level than the open stream's (a policy's change or
// probe, not a fixed level's): the second zstd stream takes it, so the first keeps its
// history for the way back.
// (Not for the one new frame at the same level that widens the window: codec.h,
// kZstdWidenAfter.)
void keep_zstd_history(TxStream& s, Level level) {
  const ZstdSlot& open = s.codec.zs[0];
  if (level.method == Method::Zstd && s.codec.nzstd == 1 && s.policy.cfg.kind != PolicyKind::Fixed &&
      open.level != 0 && (open.level != level.param || open.ldm != s.codec.want_ldm))
    second_zstd_stream(s);
}

// Whether the mix's promoted chunks measured level `up` within the last kResampleNs
// (promo_ns_byte, promo_wire_byte): an older figure, another process's CPU say, must
// not decide for good.
bool promo_measured(const TxStream& s, unsigned up, uint64_t now_ns) {
  return s.promo_level == up && s.promo_ns_byte > 0 && now_ns - s.promo_at_ns < kResampleNs;
}

// The time a chunk of `len` bytes takes at level `up`: what the last promoted chunks
// took there per byte (promo_measured), else the model's CPU figure
// (calibrated every kResampleNs, corrected by what the stream spends); 0: not known.
double promoted_chunk_ns(const TxStream& s, uint8_t up, size_t len, uint64_t now_ns) {
  if (promo_measured(s, up, now_ns)) return s.promo_ns_byte * static_cast<double>(len);
  const LevelModel& l = s.policy.model.level[up];
  return l.known ? l.cpu_ns_byte * s.policy.model.cpu_gain * static_cast<double>(len) : 0;
}

// Whether level `up` alone leaves the link idle at this cap (CPU-bound): what the last
// promoted chunks took per byte against the link's time for their wire bytes
// (promo_measured), else the model's verdict.
bool up_cpu_bound(const TxStream& s, const WireMeter& m, uint8_t up, uint64_t now_ns) {
  if (promo_measured(s, up, now_ns) && m.rate_bps > 0) return s.promo_ns_byte > s.promo_wire_byte * 1e9 / m.rate_bps;
  return model_cpu_bound(s.policy.model, up);
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
bool promote_chunk(TxStream& s, const WireMeter& m, uint8_t lvl, double lead, size_t len, uint64_t now_ns) {
  if (s.policy.cfg.kind != PolicyKind::Datarate || lvl == 0) return false;
  // A probe down from the level above measures the level probed, not a mix with the
  // level it left: HTML at 10 MiB/s, a probe from a CPU-bound zstd:6 down to zstd:5 sent
  // 14-19 of its 21-23 chunks back up at zstd:6, read 50-56 MiB/s against zstd:6's
  // 61-77, was reverted, and the run stayed at zstd:6 (72-74 MiB/s; runs that reached
  // zstd:5 and mixed moved 80-87).
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
  // while it compresses: zstd:19 took ~30 ms a chunk of text, over zstd:5's lead in a
  // 10 ms bucket, and the mix moved a quarter of zstd:5's rate.
  if (lead <= keep ||
      (m.depth_ns > 0 && promoted_chunk_ns(s, static_cast<uint8_t>(up), len, now_ns) > (lead - keep) * m.depth_ns)) {
    s.promo_run = 0;
    return false;
  }
  if (!cross) return true;
  // Two zstd levels: each stream's history then holds only its own chunks, which costs
  // ratio. That can pay only where the level above is CPU-bound; where it alone would
  // keep the link busy, the policy moves to it (with its whole history): text at
  // 10 MiB/s mixing zstd:6 with a link-bound zstd:9 moved 42.2-43.2 MiB/s, zstd:6 alone
  // 44.0. And the chunks go up in runs of kZstdMixRun, so that each history holds whole windows: at
  // the zstd:3/zstd:5 crossing on HTML, with 16-25% of the chunks at zstd:5, chunk by
  // chunk sent a lower ratio than zstd:3 alone (7.08-7.10 against 7.11), runs of 16 a
  // higher one (7.16-7.30). A run goes on while the lead covers the next chunk.
  if (!in_run && !(up_cpu_bound(s, m, static_cast<uint8_t>(up), now_ns) && second_zstd_stream(s))) return false;
  s.promo_run = static_cast<uint8_t>(in_run ? s.promo_run - 1 : kZstdMixRun - 1);
  return true;
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

// Sends the send buffer's bytes (see tx_flush), adding waits to *blocked.
int flush_pending(TxStream& s, const IoOps& io, const WireMeter& m, int fd, int flags, uint64_t* blocked) {
  if (!tx_pending(s)) return 0;
  iovec v{s.pend + s.pend_off, tx_pending(s)};
  int e = send_all(io, m, fd, &v, 1, flags, blocked);
  s.pend_off = s.pend_len - v.iov_len;
  if (!tx_pending(s)) s.pend_len = s.pend_off = 0;
  if (e && e != EAGAIN) {  // part of a frame may be on the wire: the stream is over
    s.broken = e;
    s.pend_len = s.pend_off = 0;  // never to be sent: readiness stops waiting for them
  }
  return e;
}

// Copies what is left of v[0..cnt) into the empty send buffer.
void keep_rest(TxStream& s, const iovec* v, int cnt) {
  static_assert(kPendSize >= kMaxFrameBytes, "the send buffer holds any one frame whole");
  size_t n = 0;
  for (int i = 0; i < cnt; ++i) {
    std::memcpy(s.pend + n, v[i].iov_base, v[i].iov_len);
    n += v[i].iov_len;
  }
  s.pend_len = n;
  s.pend_off = 0;
}

}  // namespace

int tx_flush(TxStream& s, const IoOps& io, const WireMeter& m, int fd, int flags) noexcept {
  if (s.broken) return s.broken;
  uint64_t blocked = 0;
  return flush_pending(s, io, m, fd, flags, &blocked);
}

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
  for (unsigned i = 0; i < levels->count && i < 8; ++i)  // a change of zstd level starts a new zstd frame
    if (levels->levels[i].method == Method::Zstd) s.policy.dr.fresh |= static_cast<uint8_t>(1u << i);
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
    int e = flush_pending(s, io, m, fd, flags, &flush_blocked);
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
  size_t pos = 0;
  while (pos < total) {
    size_t len = total - pos < kMaxFrameRaw ? total - pos : kMaxFrameRaw;
    if (pos) t0 = io.now_ns();
    double lead = m.ahead ? m.ahead(m.ctx) : -1;  // in bucket depths; -1: not known
    bool sample = tx_wants_calibration(s, len, t0, lead);
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
    // made the next chunks' waits look short and the period's rate high (27 MiB/s read
    // at 5 MiB/s x ratio 4.4), and the following period a "drop" that reset back-offs.
    uint64_t cal_ns = 0;
    if (sample) {
      uint64_t c0 = io.now_ns();
      tx_calibrate(s, io, payload[0].iov_base, len);
      cal_ns = io.now_ns() - c0;
      // The first round may have picked the level already (the cap's rate known).
      lvl = s.policy.level;
      level = s.levels->levels[lvl];
      try_it = level.method != Method::Raw && len >= kSmallWrite;
    }
    bool promoted = false;
    uint8_t policy_lvl = lvl;
    if (try_it && promote_chunk(s, m, lvl, lead, len, t0)) {
      lvl = static_cast<uint8_t>(lvl + 1);
      level = s.levels->levels[lvl];
      promoted = true;
    }
    uint64_t cpu_ns = 0;
    if (try_it) keep_zstd_history(s, level);
    if (try_it && worth_trying(s, payload[0].iov_base, len)) {
      uint64_t c0 = io.now_ns();
      size_t c = compress_chunk(s, level, payload[0].iov_base, len, &h.flags);
      cpu_ns = io.now_ns() - c0;
      if (promoted) {  // what a chunk at that level costs, for the next promotions
        double per_byte = static_cast<double>(cpu_ns) / static_cast<double>(len);
        double wire_byte = static_cast<double>(c ? c : len) / static_cast<double>(len);
        bool again = promo_measured(s, lvl, c0);
        s.promo_ns_byte = again ? 0.75 * s.promo_ns_byte + 0.25 * per_byte : per_byte;
        s.promo_wire_byte = again ? 0.75 * s.promo_wire_byte + 0.25 * wire_byte : wire_byte;
        s.promo_level = lvl;
        s.promo_at_ns = c0;
      }
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
    int err = send_all(io, m, fd, v, nv, flags, &blocked);
    bool kept = false;
    if (err == EAGAIN && nonblocking) {  // the socket is full: the rest waits in the send buffer
      keep_rest(s, v, nv);
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
    note_link(s, t1 - t0 - cal_ns, blocked - cal_ns);  // the link's state: without calibration
    s.last_waited = blocked > cal_ns;
    // What the mix measured of the level above the policy's: its CPU ceiling (probes
    // of it are judged by it, policy_datarate.cc worth_probing).
    s.policy.dr.up_cpu_rate = promo_measured(s, policy_lvl + 1u, t1) ? 1e9 / s.promo_ns_byte : 0;
    uint8_t next = policy_on_chunk(s.policy, ChunkReport{t1, len, wire, t1 - t0, blocked, cpu_ns, promoted});
    if (next != policy_lvl && blog_enabled(LogLevel::Debug))
      blog(LogLevel::Debug, "compression: fd %d level %u -> %u (last rate %.1f MiB/s, link %.1f MiB/s)", fd, policy_lvl,
           next, s.policy.dr.pdr / 1048576.0, s.policy.model.wire_bps / 1048576.0);
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
