// SPDX-License-Identifier: MIT
// The wire meter and the other helpers the framed data calls share (compress_send,
// compress_recv, compress_drain): byte limits charged with wire bytes, the real I/O
// calls the streams make, and a connection's lock taken for one number. Private to
// interpose/compressed/. Runs inside the host: no allocation.
#pragma once
#include <cstddef>
#include <cstdint>
#include <sys/types.h>

#include "compress/stream_io.h"
#include "interpose/compressed/compress_glue.h"
#include "runtime/ticket.h"

namespace bonsai::compress {

// The real sendmsg/recv/poll and CLOCK_MONOTONIC, for the streams (compress/stream_io.h).
extern const IoOps kRealIo;

// ---- wire meter: byte limits see wire bytes ----
// A framed call's ticket, for the stream's WireMeter.
// How a meter meets a bucket in debt.
enum class MeterWait : uint8_t {
  Wait,     // waits (a blocking call)
  Refuse,   // must not wait (a non-blocking call): allow() refuses (0) and the
            // descriptor takes its place in the bucket's queue (runtime/pace.h); where
            // it cannot (a descriptor beyond the pacing table) it waits as before
  Flush,    // the library's own flush in a readiness call: as Refuse, but where the
            // descriptor cannot be paced it charges without waiting (charge_only)
};
struct Meter {
  Ticket t;
  size_t chunk;
  bool is_write;  // sent bytes are paid before they move
  MeterWait wait;
  int fd;
  bool refused;   // allow() refused at least once (the bucket, not the socket, is short)
};
// The meter of a framed call `id` on fd (*limited: the limiter is active; if not,
// the meter is empty and nothing is charged or counted). `wait`: Refuse for a call
// that must not wait (nonblocking()).
WireMeter meter_for(Meter& m, CallId id, int fd, bool* limited, MeterWait wait = MeterWait::Wait);
// Counts the wire bytes of a framed call next to its application bytes (ticket_count).
void count_wire(const Ticket& t, uint64_t wire);
// A meter that charges the bucket but never waits: the library's own flushes (in a
// readiness call, which may have a zero timeout) leave the wait to the next write.
WireMeter charge_only(Meter& m, int fd, bool* limited);
// The meter of the library's flush of a send buffer in a readiness call or before a
// read (MeterWait::Flush): bytes go when the descriptor's turn in the bucket comes.
WireMeter paced_flush(Meter& m, int fd, bool* limited);

// ---- connections ----
// True if a write on fd must not wait: MSG_DONTWAIT or an O_NONBLOCK socket.
bool nonblocking(int fd, int flags);
// After a write or flush under tx_mu: the readiness state (tx_pend, owe_out). A
// write refused with EAGAIN is owed an EPOLLOUT; one that took bytes is not (the
// application is not waiting for an edge).
void note_tx(Conn* c, bool refused, bool took = false);
// Takes c's lock for a call on number `fd`. @return false, the lock not held, if this
// thread holds it already (EINTR) or c no longer reaches fd (EBADF: closed and
// recycled meanwhile).
bool lock_reaching(ConnLock& lock, Conn* c, int fd, bool tx);

}  // namespace bonsai::compress
