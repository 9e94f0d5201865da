// SPDX-License-Identifier: MIT
// bonsaictl's handle on the host segment (abi/host_abi.h): the capacity that the services
// of one user under one namespace prefix share (docs/reference/shares.md). Made like a service
// segment (exclusively, mode 0600, owned by the user it is for); anything found there is
// checked before use. Errors are thrown as CtlError.
#pragma once
#include <string>

#include "abi/host_abi.h"

namespace bonsai::ctl {

// The host segment's path for ctl_uid() under shm_prefix().
std::string host_path();

// Installs `capacity` (creating the segment if needed). Buckets of capacity rules that
// continue (same calls, fd kinds, unit) keep their state; others start afresh.
void host_install(const LimitSet& capacity);

// The installed capacity. @return false if there is none (no segment, or not usable).
bool host_read(LimitSet& out);

// Gives each sharing rule of `set` its capacity rule from the installed capacity.
// @return how many rules have a ceil above their rate but nothing to borrow from.
unsigned host_resolve(LimitSet& set);

}  // namespace bonsai::ctl
