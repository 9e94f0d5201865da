// SPDX-License-Identifier: MIT
// The hooks by which the wrappers hand a compressed socket to libbonsai/compress.
// When compression is not configured each check is one load and one predictable
// branch; everything else is noinline in the files of this folder, one job each:
// compress_setup (set-up, fork, exit), compress_stats (the stats line), compress_fds
// (the fd table's state words), compress_classify (which sockets are framed),
// compress_lock (a connection's lock), compress_send and compress_recv (framed data
// calls; compress_meter, the wire meter they share), compress_drain (the send buffer
// of non-blocking sockets), compress_ready (readiness), compress_stdio (FILEs on
// sockets). The wrappers include this header only. Runs inside the host.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

struct mmsghdr;

#include "abi/calls.h"
#include "compress/fd_table.h"

namespace bonsai::compress {

extern constinit bool g_tx_on;  // BONSAI_COMPRESS_TO names a destination
extern constinit bool g_rx_on;  // BONSAI_COMPRESS_ACCEPT
extern constinit bool g_on;     // either

// ---- set-up and end (interpose/init.cc's constructor and destructor) ----
// Reads the BONSAI_COMPRESS_* options; switches the hooks on if any is set.
void hooks_init() noexcept;
// Writes the BONSAI_COMPRESS_STATS line (at exit: our destructor).
void hooks_at_exit() noexcept;

// ---- checks (inline; per-descriptor state in compress/fd_table.h) ----
// Is fd (state above plain) a framed stream to write to? Verifies that fd still
// holds the socket the state was recorded for (else drops the state: false).
bool tx_check(int fd, uintptr_t state) noexcept __attribute__((noinline));
// Is fd (state not plain) a framed stream? Classifies it on first use; verifies a
// recorded socket's identity like tx_check.
bool rx_check(int fd, uintptr_t state) noexcept __attribute__((noinline));

// True if writes on fd must go out as frames.
inline bool tx_framed(int fd) noexcept {
  if (!g_tx_on) [[likely]] return false;
  uintptr_t st = fd_state(fd);
  return st > kFdPlain && tx_check(fd, st);
}

// Connections whose send buffer holds bytes (compress/conn_pool.h).
extern constinit std::atomic<int> g_tx_pending_conns;
// Before a read on fd: a send buffer holding bytes goes out first (a request a
// non-blocking write left there must reach the peer before its reply is awaited);
// a blocking socket's is sent in full, a non-blocking one's as far as it goes.
void tx_before_read(int fd) noexcept __attribute__((noinline));

// True if reads on fd must be served from decoded frames (classifies the socket on
// its first read: a MSG_PEEK for the stream header), or must fail because the
// library could not decode its framed stream (rx_recv then reports ECONNRESET).
// Also sends what fd's send buffer holds (tx_before_read).
inline bool rx_framed(int fd) noexcept {
  if (g_tx_on && g_tx_pending_conns.load(std::memory_order_relaxed) > 0) [[unlikely]] tx_before_read(fd);
  if (!g_rx_on) [[likely]] return false;
  uintptr_t st = fd_state(fd);
  if (st == kFdPlain) return false;
  return rx_check(fd, st);
}

// ---- data calls on framed sockets (noinline; do their own limiting/accounting) ----
ssize_t tx_send(int fd, const iovec* v, int cnt, int flags, CallId id) noexcept __attribute__((noinline));
ssize_t tx_send1(int fd, const void* b, size_t n, int flags, CallId id) noexcept __attribute__((noinline));
// sendfile/splice onto a framed socket: read + compress + send (one chunk per call).
ssize_t tx_sendfile(int out, int in, off64_t* off, size_t n, CallId id) noexcept __attribute__((noinline));
ssize_t rx_recv(int fd, const iovec* v, int cnt, int flags, CallId id) noexcept __attribute__((noinline));
ssize_t rx_recv1(int fd, void* b, size_t n, int flags, CallId id) noexcept __attribute__((noinline));
ssize_t rx_recvmsg(int fd, msghdr* m, int flags) noexcept __attribute__((noinline));
// sendmmsg/recvmmsg on a framed socket: one message after the other through
// tx_send/rx_recvmsg (MSG_WAITFORONE honoured; recvmmsg's timeout is not).
int tx_sendmmsg(int fd, mmsghdr* v, unsigned int n, int flags) noexcept __attribute__((noinline));
int rx_recvmmsg(int fd, mmsghdr* v, unsigned int n, int flags) noexcept __attribute__((noinline));
// splice out of a framed socket into `out` (a pipe): decoded bytes, copied (at most
// 16 KiB a call); the socket's wire bytes are charged as its read.
ssize_t rx_splice(int in, int out, size_t n, unsigned int flags) noexcept __attribute__((noinline));

// ---- the send buffer of non-blocking framed sockets ----
// What a socket's send buffer still holds after tx_flush_now.
enum class TxLeft : uint8_t {
  None,  // nothing (or fd is not a framed socket)
  Full,  // bytes the socket did not take: wait for POLLOUT on the library's behalf
  Busy,  // another thread holds the connection (it sends them itself)
  Paced,  // bytes the byte cap does not allow yet: fd holds a place in the bucket's
          // queue (runtime/pace.h), due at *due; POLLOUT is withheld, the socket not
          // waited for (it may take them: the wait is the bucket's)
};
// Sends what fd's send buffer holds without waiting, as far as the socket and the cap
// allow now (skipped while another thread sends on it). Paced: *due (if given) becomes
// the earlier of itself (0: none) and when fd's place is due.
TxLeft tx_flush_now(int fd, uint64_t* due = nullptr) noexcept __attribute__((noinline));
// close/shutdown: sends fd's send buffer, waiting for the socket up to SO_LINGER's
// time (if on) or 2 s; what is left then is dropped and logged.
void tx_drain(int fd) noexcept __attribute__((noinline));
// At exit: every send buffer holding bytes is sent (2 s for all of them at most;
// a connection another thread holds is skipped), as the kernel would still send
// what an exiting process wrote.
void tx_drain_all() noexcept;

// ---- stdio (compress_stdio.cc) ----
// A FILE fdopen() made on an internet stream socket while compression is on: its
// reads and writes go through the framed paths, which charge them (wire bytes under
// fread/fwrite), so the stdio wrappers hand it over uncharged.
inline bool stdio_own_file(FILE* f) noexcept {
  if (!g_on || !f) [[likely]] return false;
  FdSlot* s = fd_slot(fileno_unlocked(f));
  return s && s->file.load(std::memory_order_relaxed) == f;
}

// ---- connection life (the wrappers call these when g_on, after the real call) ----
// connect(fd, a, l) returned r (errno as it left it): a socket connected or
// connecting (EINPROGRESS) to a configured destination gets a sending half; whatever
// was recorded for the number is forgotten. errno preserved.
void on_connected(int fd, const sockaddr* a, socklen_t l, int r) noexcept __attribute__((noinline));
// accept/accept4 returned the new socket fd, whose peer is (peer, plen) as the kernel
// wrote it: bound as on_connected (and in no epoll set yet). errno preserved.
void on_accepted(int fd, const sockaddr* peer, socklen_t plen) noexcept __attribute__((noinline));
void on_close(int fd) noexcept __attribute__((noinline));
// After dup/dup2/dup3/F_DUPFD made newfd from oldfd (dup2/dup3 call on_close(newfd)
// first): a compressed connection is reachable by both numbers, one stream.
void on_dup(int oldfd, int newfd) noexcept __attribute__((noinline));

// ---- readiness (poll_calls.cc) ----
// Any framed socket whose send buffer holds bytes, or owes an EPOLLOUT?
bool any_tx_state() noexcept;
// fd's send buffer holds bytes (no lock, no check of the number).
bool fd_tx_pending(int fd) noexcept;
// Sockets registered with epfd whose send buffer holds bytes, each flushed first
// (tx_flush_now): those still Full are written to fd_out/data_out (at most max);
// *busy is set if one was Busy; *due is the earliest due time of those Paced (0:
// none). @return count.
int epoll_tx_pending(int epfd, int* fd_out, uint64_t* data_out, int max, bool* busy, uint64_t* due) noexcept;
// Sockets registered with epfd for EPOLLOUT whose send buffer is now empty after the
// application was refused or had EPOLLOUT withheld: each reported once (owe cleared).
// @return entries written (at most max).
int epoll_tx_owed(int epfd, int* fd_out, uint64_t* data_out, int max) noexcept;
// EPOLLOUT on fd was withheld from the application: report it once the buffer empties.
void tx_withheld(int fd) noexcept;
// Any framed socket with bytes waiting in the library? (false: nothing to add)
bool any_rx_pending() noexcept;
bool fd_rx_pending(int fd) noexcept;
// epoll registrations of sockets, so epoll_wait can report pending ones.
void epoll_note(int epfd, int op, int fd, uint32_t events, uint64_t data) noexcept;
// Appends (events, data) of pending sockets registered with epfd for input.
// @return entries written to out (at most max).
int epoll_pending(int epfd, uint32_t* ev_out, uint64_t* data_out, int max) noexcept;

}  // namespace bonsai::compress
