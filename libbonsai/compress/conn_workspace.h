// SPDX-License-Identifier: MIT
// The memory of compressed connections (inside compress/ only: conn_pool.cc): each
// record's workspaces, mmap'd on first use within the memory cap, with address space
// reserved for the 8 MiB zstd windows and committed in place when a connection widens.
// Workspaces are kept with their record for reuse; only the widened pages go back.
#pragma once
#include "compress/conn_pool.h"

namespace bonsai::compress {

// When a record is released: gives back a long connection's widened zstd pages (see
// conn_workspace.cc). Under both of the record's locks. errno preserved.
void conn_give_back_grown(Conn& c) noexcept;

}  // namespace bonsai::compress
