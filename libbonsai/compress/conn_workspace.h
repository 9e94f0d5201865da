// SPDX-License-Identifier: MIT
// The memory of compressed connections (conn_workspace.cc): each record's workspaces
// (compress/conn_record.h), mmap'd on first use within the memory cap, with address
// space reserved for the 8 MiB zstd windows and committed in place when a connection
// widens. Workspaces are kept with their record for reuse; only the widened pages go
// back. The table (conn_pool.h) includes this for its users.
#pragma once
#include <cstdint>

#include "compress/codec.h"
#include "compress/conn_record.h"
#include "compress/policy_row.h"

namespace bonsai::compress {

// Caps the bytes of workspaces mapped in all (default: unlimited). Workspaces are
// kept for reuse, so this bounds the pool's memory; past it enabling fails.
void pool_set_mem_cap(uint64_t bytes) noexcept;
// @return bytes of workspaces mapped so far.
uint64_t pool_mem_mapped() noexcept;
// @return the most bytes of workspaces mapped at once, and how many workspaces (or
// growths to the 8 MiB window) were refused (the cap, or the kernel's refusal).
uint64_t pool_mem_peak() noexcept;
uint64_t pool_mem_refused() noexcept;

// Sets up the sending half (workspace mapped on first use). @return success.
bool conn_tx_enable(Conn* c, const LevelList* levels, const PolicyConfig& policy) noexcept;
// Sets up the receiving half. @return success.
bool conn_rx_enable(Conn* c) noexcept;

// When a record is released: gives back a long connection's widened zstd pages (see
// conn_workspace.cc). Under both of the record's locks. errno preserved.
void conn_give_back_grown(Conn& c) noexcept;

}  // namespace bonsai::compress
