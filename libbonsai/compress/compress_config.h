// SPDX-License-Identifier: MIT
// Compression configuration: where to compress (BONSAI_COMPRESS_TO), whether to
// decode (BONSAI_COMPRESS_ACCEPT), the levels and the policy. Parsed once, in the
// constructor; matching a peer address is allocation-free.
#pragma once
#include <cstdint>
#include <sys/socket.h>

#include "compress/codec.h"
#include "compress/policy.h"

namespace bonsai::compress {

struct Dest {
  uint8_t family;  // AF_INET or AF_INET6
  uint8_t prefix;  // bits that must match
  uint16_t port;   // host order; 0: any port ('*')
  uint8_t addr[16];
};

inline constexpr size_t kMaxDests = 16;

struct CompressConfig {
  Dest to[kMaxDests];
  uint8_t nto;
  bool accept;
  LevelList levels;
  PolicyConfig policy;
  uint64_t mem_cap;  // bytes of workspaces mapped in all (BONSAI_COMPRESS_MEM_MIB)
};
inline constexpr uint64_t kDefaultMemCap = uint64_t{16384} << 20;

// Parses "127.0.0.1:9000,10.0.0.0/8:*,[::1]:*" into cfg.to.
// @return nullptr, or what is wrong.
const char* dests_parse(const char* text, CompressConfig& cfg) noexcept;

// @return true if the peer `a` matches one of cfg.to.
bool dest_match(const CompressConfig& cfg, const sockaddr* a, socklen_t len) noexcept;

// Reads BONSAI_COMPRESS_{TO,ACCEPT,LEVELS,POLICY,PERIOD,ALPHA} into cfg. Errors are
// logged once and switch the faulty part off (fail open). @return true if any
// compression or decoding is configured.
bool config_from_env(CompressConfig& cfg) noexcept;

}  // namespace bonsai::compress
