// SPDX-License-Identifier: MIT
// Parsing and matching of the compression configuration (see compress_config.h).
#include "compress/compress_config.h"

#include <arpa/inet.h>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>

#include "log/blog.h"

namespace bonsai::compress {
namespace {

bool parse_uint(const char* p, const char* end, unsigned max, unsigned& v) {
  if (p == end || end - p > 5) return false;
  v = 0;
  for (; p < end; ++p) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + static_cast<unsigned>(*p - '0');
  }
  return v <= max;
}

const char* parse_one(const char* p, const char* end, Dest& d) {
  char host[64];
  const char* colon;
  const char* host_end;
  if (*p == '[') {  // [v6]:port
    host_end = static_cast<const char*>(std::memchr(p, ']', static_cast<size_t>(end - p)));
    if (!host_end || host_end + 1 >= end || host_end[1] != ':') return "expected [ADDR]:PORT";
    colon = host_end + 1;
    ++p;
  } else {
    colon = nullptr;
    for (const char* q = p; q < end; ++q)
      if (*q == ':') colon = q;
    if (!colon) return "expected ADDR:PORT or ADDR:*";
    host_end = colon;
  }
  const char* slash = static_cast<const char*>(std::memchr(p, '/', static_cast<size_t>(host_end - p)));
  const char* addr_end = slash ? slash : host_end;
  if (addr_end - p >= static_cast<long>(sizeof host) || addr_end == p) return "bad address";
  std::memcpy(host, p, static_cast<size_t>(addr_end - p));
  host[addr_end - p] = 0;
  d = Dest{};
  if (inet_pton(AF_INET, host, d.addr) == 1) d.family = AF_INET;
  else if (inet_pton(AF_INET6, host, d.addr) == 1) d.family = AF_INET6;
  else return "bad address";
  unsigned bits = d.family == AF_INET ? 32 : 128;
  if (slash && !parse_uint(slash + 1, host_end, bits, bits)) return "bad prefix length";
  d.prefix = static_cast<uint8_t>(bits);
  const char* port = colon + 1;
  if (end - port == 1 && *port == '*') return nullptr;
  unsigned v;
  if (!parse_uint(port, end, 65535, v) || v == 0) return "bad port (1..65535 or *)";
  d.port = static_cast<uint16_t>(v);
  return nullptr;
}

bool prefix_equal(const uint8_t* a, const uint8_t* b, unsigned bits) {
  unsigned bytes = bits / 8;
  if (std::memcmp(a, b, bytes) != 0) return false;
  unsigned rest = bits % 8;
  if (!rest) return true;
  auto mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a[bytes] & mask) == (b[bytes] & mask);
}

}  // namespace

const char* dests_parse(const char* text, CompressConfig& cfg) noexcept {
  cfg.nto = 0;
  const char* p = text;
  while (*p) {
    const char* end = p;
    while (*end && *end != ',') ++end;
    if (cfg.nto >= kMaxDests) return "too many destinations (at most 16)";
    const char* err = parse_one(p, end, cfg.to[cfg.nto]);
    if (err) {
      cfg.nto = 0;
      return err;
    }
    ++cfg.nto;
    p = *end ? end + 1 : end;
  }
  return nullptr;
}

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
  if (const char* t = std::getenv("BONSAI_COMPRESS_TO"); t && *t)
    if (const char* err = dests_parse(t, cfg))
      blog(LogLevel::Error, "BONSAI_COMPRESS_TO: %s in '%s'; not compressing", err, t);
  const char* acc = std::getenv("BONSAI_COMPRESS_ACCEPT");
  cfg.accept = acc && (std::strcmp(acc, "1") == 0 || std::strcmp(acc, "true") == 0 || std::strcmp(acc, "yes") == 0);
  if (const char* t = std::getenv("BONSAI_COMPRESS_LEVELS"); t && *t)
    if (const char* err = levels_parse(t, cfg.levels)) {
      blog(LogLevel::Error, "BONSAI_COMPRESS_LEVELS: %s in '%s'; not compressing", err, t);
      cfg.nto = 0;
    }
  if (const char* t = std::getenv("BONSAI_COMPRESS_POLICY"); t && *t)
    if (const char* err = policy_parse(t, cfg.levels, cfg.policy)) {
      blog(LogLevel::Error, "BONSAI_COMPRESS_POLICY: %s in '%s'; not compressing", err, t);
      cfg.nto = 0;
    }
  if (const char* t = std::getenv("BONSAI_COMPRESS_PERIOD_MS"); t && *t) {
    long ms = std::strtol(t, nullptr, 10);
    if (ms > 0 && ms <= 60000) cfg.policy.period_ns = static_cast<uint64_t>(ms) * 1'000'000;
    else blog(LogLevel::Warn, "BONSAI_COMPRESS_PERIOD_MS: want 1..60000, got '%s'", t);
  }
  if (const char* t = std::getenv("BONSAI_COMPRESS_ALPHA"); t && *t) {
    double a = std::strtod(t, nullptr);
    if (a > 0 && a < 1) cfg.policy.alpha = a;
    else blog(LogLevel::Warn, "BONSAI_COMPRESS_ALPHA: want 0..1, got '%s'", t);
  }
  return cfg.nto > 0 || cfg.accept;
}

}  // namespace bonsai::compress
