// SPDX-License-Identifier: MIT
// What the supervisor reads about a supervised thread from outside: its process,
// its I/O counters, the kind of one of its descriptors, its memory (iovec and
// msghdr arrays; offsets it writes back for calls it makes on the thread's behalf)
// and how many bytes wait on one of its sockets or pipes. Each
// answer may fail (the thread died, another user's process, a kernel without
// pidfd_getfd): callers fall back to what the call asked for.
#pragma once
#include <cstddef>
#include <cstdint>
#include <sys/types.h>
#include <sys/uio.h>

#include "abi/calls.h"

namespace bonsai::ctl {

// The supervisor's descriptors: it keeps one per thread (its I/O counters)
// and one per process (a pidfd). Raises its own soft RLIMIT_NOFILE to the hard limit
// and keeps one spare descriptor, so that a thread's process can always be looked up
// (sv_tgid_of) however many are open: a call is never let go because a table is full.
// `test_nofile` (BONSAI_SV_TEST_NOFILE, tests only; 0: none) then lowers the soft limit.
// @return the soft limit in force.
uint64_t sv_fds_setup(uint64_t test_nofile);

// While it lives, the spare descriptor's place is free: for a /proc file read and
// closed at once (a process's or thread's identity, whether it still runs), never kept.
struct SvSpareFd {
  SvSpareFd() noexcept;
  ~SvSpareFd();
  SvSpareFd(const SvSpareFd&) = delete;
  SvSpareFd& operator=(const SvSpareFd&) = delete;
};

// Tests only (BONSAI_SV_TEST_BLIND, a list of "mem", "fd", "io"): what a supervisor
// that is not the program's ancestor sees under Yama ptrace_scope >= 1 (process_vm_readv
// and pidfd_getfd refused: "mem", "fd") or when the program is non-dumpable ("io":
// its /proc counters unreadable too), on a machine without Yama.
void sv_target_test_blind(const char* spec);

// The thread group (process) of thread `tid`, from /proc/TID/status. @return -1 if gone.
int sv_tgid_of(int tid);

// Whether thread `tid` of process `tgid` still runs (tgkill with signal 0: no /proc
// file to open, so it answers for a non-dumpable thread too).
bool sv_thread_alive(int tgid, int tid);

// The per-thread I/O counters file /proc/TGID/task/TID/io, opened once per thread.
// @return an fd (O_CLOEXEC) or -1.
int sv_io_open(int tgid, int tid);

struct SvIo {
  uint64_t rchar = 0, wchar = 0;
};
// Re-reads an open io file. @return false if the thread is gone.
bool sv_io_read(int fd, SvIo& io);

// The kind of descriptor `fd` of process `tgid` (stat of /proc/TGID/fd/FD).
// Unknown (gone, no permission): File.
FdKind sv_fd_kind(int tgid, int fd);

// Copies `len` bytes at `addr` in thread `tid`'s memory. @return false on any failure.
bool sv_mem_read(int tid, uint64_t addr, void* out, size_t len);

// Copies `len` bytes to `addr` in thread `tid`'s memory. @return false on any failure.
bool sv_mem_write(int tid, uint64_t addr, const void* in, size_t len);

// Copies `len` bytes of `in` to the `n` segments `remote` of thread `tid`'s memory
// (process_vm_writev). @return false unless all `len` bytes went.
bool sv_mem_writev(int tid, const void* in, size_t len, const iovec* remote, size_t n);

// Total length of an iovec array of `count` entries at `addr` in `tid`'s memory.
// @return false if it cannot be read (or the kernel would refuse it).
bool sv_iov_total(int tid, uint64_t addr, uint64_t count, uint64_t& total);

// A copy of descriptor `fd` of the process behind `pidfd` (pidfd_getfd), or -1.
int sv_fd_copy(int pidfd, int fd);

// Bytes queued for reading on a socket or pipe (FIONREAD on a copy). @return -1 unknown.
long sv_bytes_queued(int fd_copy);

}  // namespace bonsai::ctl
