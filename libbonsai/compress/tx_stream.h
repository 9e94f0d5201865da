// SPDX-License-Identifier: MIT
// The sending half of a compressed connection: cuts the application's bytes into
// chunks, compresses each at the level the policy picks as the next frame of the
// connection's codec stream (history across writes; tiny and incompressible chunks go
// raw), and sends the stream header and frames in full.
// Works in a fixed workspace: nothing allocates after tx_stream_init.
// The connection's state: tx_state.h; the send buffer's flush: tx_send_buffer.h.
#pragma once
#include <cstddef>
#include <cstdint>

#include "compress/codec.h"
#include "compress/policy.h"
#include "compress/stream_io.h"
#include "compress/tx_state.h"

namespace bonsai::compress {

// Writes below this go out as raw frames without trying to compress. With history
// (wire v2) a 100-byte write of text compresses; below 64 bytes the frame header and
// zstd's block header eat the gain.
inline constexpr size_t kSmallWrite = 64;

// Workspace bytes for a sender with these levels (buffers and codec; the second zstd
// stream's comes from TxStream::extra when first needed): with the first zstd stream's
// room (last) for the 8 MiB window, or for the 2 MiB one (`wide` false; the codec's
// ZstdRoomGrow extends it in place when the connection widens).
size_t tx_stream_size(const LevelList& levels, bool wide = true) noexcept;
// `size`: at least tx_stream_size(levels, false); all of it is used (the first zstd
// stream's room ends at mem + size).
// @return false if `size` is too small or a codec failed to initialise.
bool tx_stream_init(TxStream& s, void* mem, size_t size, const LevelList* levels,
                    const PolicyConfig& policy) noexcept;

// Sends iov[0..cnt) as frames on `fd`. `flags` are send flags (MSG_NOSIGNAL,
// MSG_MORE kept). Without MSG_DONTWAIT the call blocks until every frame is sent
// (a full socket is waited for with poll). With MSG_DONTWAIT (a non-blocking socket
// or call) it first sends what the send buffer holds, then takes chunk after chunk,
// each compressed into one frame, until the socket is full: the unsent tail of the
// last frame stays in the send buffer, and the chunk counts as taken. Under a byte
// cap (m.allow set) it takes one chunk at most; with a meter that must not wait
// (m.nowait) it asks the bucket before compressing that chunk and fails with EAGAIN
// when refused, and a frame the bucket allows only in part leaves its rest in the
// send buffer (sent when the bucket allows, by the next write or a readiness call).
// @return application bytes taken (blocking: all of them unless a send failed), or
// -1 with errno (EAGAIN: non-blocking and the send buffer could not be emptied).
ssize_t tx_write(TxStream& s, const IoOps& io, const WireMeter& m, int fd, const iovec* iov, int cnt,
                 int flags) noexcept;

}  // namespace bonsai::compress
