// SPDX-License-Identifier: MIT
// Putting a sender's frames on the socket (tx_stream.cc): all of an iovec under the wire
// meter, and the send buffer that keeps the unsent tail of a frame a non-blocking write
// took but the socket did not; tx_flush empties it (also from the readiness calls and
// drains, interpose/compressed/). No allocation.
#pragma once
#include <cstdint>

#include "compress/stream_io.h"
#include "compress/tx_state.h"

namespace bonsai::compress {

// Sends all of v[0..cnt) (modified in place: what is left unsent). Adds time spent
// waiting to *blocked. With MSG_DONTWAIT in flags it stops when the socket is full,
// or when a meter that must not wait (m.nowait) refuses.
// @return 0, EAGAIN (MSG_DONTWAIT only), or an errno.
int tx_send_all(const IoOps& io, const WireMeter& m, int fd, iovec* v, int cnt, int flags, uint64_t* blocked) noexcept;

// Sends the send buffer's bytes (see tx_flush), adding waits to *blocked.
// @return as tx_send_all; an error other than EAGAIN breaks the stream.
int tx_flush_pending(TxStream& s, const IoOps& io, const WireMeter& m, int fd, int flags, uint64_t* blocked) noexcept;

// Copies what is left of v[0..cnt) (at most one frame) into the empty send buffer.
void tx_keep_rest(TxStream& s, const iovec* v, int cnt) noexcept;

// Sends what the send buffer holds (MSG_DONTWAIT in `flags`: only what the socket
// takes now). @return 0 once empty, EAGAIN if bytes remain, or the errno that broke
// the stream.
int tx_flush(TxStream& s, const IoOps& io, const WireMeter& m, int fd, int flags) noexcept;

}  // namespace bonsai::compress
