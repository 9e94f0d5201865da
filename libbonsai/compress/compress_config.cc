// SPDX-License-Identifier: MIT
// Parsing and matching of the compression configuration (see compress_config.h).
#include "compress/compress_config.h"

#include <arpa/inet.h>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>

#include "log/blog.h"
#include "runtime/options.h"

namespace bonsai::compress {
namespace {

bool prefix_equal(const uint8_t* a, const uint8_t* b, unsigned bits) {
  unsigned bytes = bits / 8;
  if (std::memcmp(a, b, bytes) != 0) return false;
  unsigned rest = bits % 8;
  if (!rest) return true;
  auto mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a[bytes] & mask) == (b[bytes] & mask);
}

}  // namespace

bool dest_match(const CompressConfig& cfg, const sockaddr* a, socklen_t len) noexcept {
  uint8_t addr[16];
  uint8_t family;
  uint16_t port;
  if (a->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
    const auto* s = reinterpret_cast<const sockaddr_in*>(a);
    std::memcpy(addr, &s->sin_addr, 4);
    family = AF_INET;
    port = ntohs(s->sin_port);
  } else if (a->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    const auto* s = reinterpret_cast<const sockaddr_in6*>(a);
    port = ntohs(s->sin6_port);
    if (IN6_IS_ADDR_V4MAPPED(&s->sin6_addr)) {
      std::memcpy(addr, s->sin6_addr.s6_addr + 12, 4);
      family = AF_INET;
    } else {
      std::memcpy(addr, &s->sin6_addr, 16);
      family = AF_INET6;
    }
  } else {
    return false;
  }
  for (unsigned i = 0; i < cfg.nto; ++i) {
    const Dest& d = cfg.to[i];
    if (d.family == family && (d.port == 0 || d.port == port) && prefix_equal(d.addr, addr, d.prefix))
      return true;
  }
  return false;
}

bool config_from_env(CompressConfig& cfg) noexcept {
  cfg = CompressConfig{};
  cfg.levels = levels_default();
  cfg.policy = PolicyConfig{PolicyKind::Datarate, 0, kDefaultPeriodNs, kDefaultAlpha};
  cfg.mem_cap = kDefaultMemCap;
  if (const char* t = option_env(Opt::compress_to); t && *t)
    if (const char* err = dests_parse(t, cfg))
      blog(LogLevel::Error, "BONSAI_COMPRESS_TO: %s in '%s'; not compressing", err, t);
  const char* acc = option_env(Opt::compress_accept);
  cfg.accept = acc && (std::strcmp(acc, "1") == 0 || std::strcmp(acc, "true") == 0 || std::strcmp(acc, "yes") == 0);
  if (const char* t = option_env(Opt::compress_levels); t && *t)
    if (const char* err = levels_parse(t, cfg.levels)) {
      blog(LogLevel::Error, "BONSAI_COMPRESS_LEVELS: %s in '%s'; not compressing", err, t);
      cfg.nto = 0;
    }
  if (const char* t = option_env(Opt::compress_policy); t && *t)
    if (const char* err = policy_parse(t, cfg.levels, cfg.policy)) {
      blog(LogLevel::Error, "BONSAI_COMPRESS_POLICY: %s in '%s'; not compressing", err, t);
      cfg.nto = 0;
    }
  if (const char* t = option_env(Opt::compress_period_ms); t && *t) {
    long ms = std::strtol(t, nullptr, 10);
    if (ms > 0 && ms <= 60000) cfg.policy.period_ns = static_cast<uint64_t>(ms) * 1'000'000;
    else blog(LogLevel::Warn, "BONSAI_COMPRESS_PERIOD_MS: want 1..60000, got '%s'", t);
  }
  if (const char* t = option_env(Opt::compress_alpha); t && *t) {
    double a = std::strtod(t, nullptr);
    if (a > 0 && a < 1) cfg.policy.alpha = a;
    else blog(LogLevel::Warn, "BONSAI_COMPRESS_ALPHA: want 0..1, got '%s'", t);
  }
  if (const char* t = option_env(Opt::compress_mem_mib); t && *t) {
    long mib = std::strtol(t, nullptr, 10);
    if (mib > 0 && mib <= (1L << 24)) cfg.mem_cap = static_cast<uint64_t>(mib) << 20;
    else blog(LogLevel::Warn, "BONSAI_COMPRESS_MEM_MIB: want 1..16777216, got '%s'", t);
  }
  return cfg.nto > 0 || cfg.accept;
}

}  // namespace bonsai::compress
