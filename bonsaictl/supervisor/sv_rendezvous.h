// SPDX-License-Identifier: MIT
// The supervisor's side of the join rendezvous (libbonsai/abi/sv_join.h): the socket a
// service's later static and Go children join it through, in a directory of the segment
// owner's under /dev/shm, and who may join. Only the owner serves (as the user namespace
// maps it); the directory is made 0700 and used only if it is the owner's with no group
// or other bits (opened with O_NOFOLLOW, checked with fstat, as the fleet lock
// directory); the socket is bound, probed, replaced and removed through that open
// directory only. What someone else made first (the directory, a file at the socket's
// name) is not used: the supervisor serves no one, and says why.
#pragma once
#include <sys/types.h>

#include <string>

namespace bonsai::ctl {

struct SvRendezvous {
  int fd = -1;       // listening (-1: this supervisor serves no one)
  int dir_fd = -1;   // the checked directory, kept to remove the socket at the end
  std::string name;  // the socket's name in it (the service)
  dev_t dev = 0;     // the socket file this supervisor bound: removed only while still there
  ino_t ino = 0;
};

// Binds the rendezvous of `service` of the segment owned by `owner` (its uid on the
// host, as the segment's name carries it; BONSAI_SHM_PREFIX `prefix`). A stale socket
// (no one listens) or one not of this user is replaced; a live one of this user's is
// another supervisor of the service's (its programs join that one): not served.
// @return fd -1 when not served; `why` is then set when something in the way was found
// (someone else's directory, a non-socket at the name), empty when there is nothing to
// say (another user's segment, another supervisor serving, a name too long).
SvRendezvous sv_rendezvous_open(const std::string& service, const std::string& prefix, unsigned owner,
                                std::string& why);

// Stops serving: closes the socket and removes it if it is still the one bound.
void sv_rendezvous_close(SvRendezvous& r);

// May the peer of the accepted connection `sock` join: a process of this user (no root
// exception) that this supervisor can see (its pid in this namespace is not 0), and with
// `same_ns` in this very pid namespace (a procfs lookup)? A process it cannot see would
// be neither charged nor counted. A listener handed over unasked needs no more: its
// sender checked that this supervisor is in its own namespace (abi/sv_join.h); the
// filter is sent only to a peer of this namespace.
bool sv_rendezvous_peer_ok(int sock, bool same_ns);

}  // namespace bonsai::ctl
