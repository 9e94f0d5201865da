// SPDX-License-Identifier: MIT
// The grammar of the compression settings (BONSAI_COMPRESS_LEVELS, BONSAI_COMPRESS_TO
// and BONSAI_COMPRESS_POLICY, its names from compress/policy.h's table), shared by the
// library and bonsaictl's `compression:` check so that both accept exactly the same
// text. Pure: no I/O, no allocation, no codec.
#include <arpa/inet.h>
#include <cstring>
#include <netinet/in.h>

#include "compress/codec.h"
#include "compress/codec_params.h"
#include "compress/compress_config.h"

namespace bonsai::compress {
namespace {

bool parse_int(const char*& p, const char* end, int& v) {
  v = 0;
  const char* start = p;
  while (p < end && *p >= '0' && *p <= '9' && p - start < 3) v = v * 10 + (*p++ - '0');
  return p > start;
}

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
    int colons = 0;
    for (const char* q = p; q < end; ++q)
      if (*q == ':') colon = q, ++colons;
    if (!colon) return "expected ADDR:PORT or ADDR:*";
    if (colons > 1) return "an IPv6 address needs brackets: [ADDR]:PORT";  // ::1:80 is ambiguous
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
  else return "not an IPv4 or IPv6 address";
  unsigned bits = d.family == AF_INET ? 32 : 128;
  if (slash && !parse_uint(slash + 1, host_end, bits, bits)) return "prefix length out of range (0..32 for IPv4, 0..128 for IPv6)";
  d.prefix = static_cast<uint8_t>(bits);
  const char* port = colon + 1;
  if (end - port == 1 && *port == '*') return nullptr;
  unsigned v;
  if (!parse_uint(port, end, 65535, v) || v == 0) return "port must be 1..65535 or *";
  d.port = static_cast<uint16_t>(v);
  return nullptr;
}

// "unknown policy (datarate, queue, fixed:LEVEL)", from the table (built once).
const char* unknown_policy() {
  static char msg[160];
  if (msg[0]) return msg;
  size_t used = 0;
  auto put = [&](const char* s) {
    for (; *s && used + 1 < sizeof msg; ++s) msg[used++] = *s;
  };
  put("unknown policy (");
  for (size_t i = 0; i < kPolicyCount; ++i) {
    put(i ? ", " : "");
    put(kPolicyNames[i].name);
    if (kPolicyNames[i].takes_level) put(":LEVEL");
  }
  put(")");
  msg[used] = '\0';
  return msg;
}

}  // namespace

const char* policy_parse(const char* text, const LevelList& levels, PolicyConfig& out) noexcept {
  PolicyConfig c{PolicyKind{}, 0, kDefaultPeriodNs, kDefaultAlpha};  // the first row: the default
  if (text && *text) {
    size_t i = 0;
    size_t len = 0;
    for (; i < kPolicyCount; ++i) {
      len = std::strlen(kPolicyNames[i].name);
      if (std::strncmp(text, kPolicyNames[i].name, len) == 0 && text[len] == (kPolicyNames[i].takes_level ? ':' : '\0'))
        break;
    }
    if (i == kPolicyCount) return unknown_policy();
    c.kind = static_cast<PolicyKind>(i);
    if (kPolicyNames[i].takes_level) {
      LevelList one{};
      if (levels_parse(text + len + 1, one) || one.count > 2) return "fixed:LEVEL needs one level";
      Level want = one.count == 2 ? one.levels[1] : one.levels[0];
      bool found = false;
      for (uint8_t l = 0; l < levels.count && !found; ++l)
        if (levels.levels[l].method == want.method && levels.levels[l].param == want.param) {
          c.fixed_level = l;
          found = true;
        }
      if (!found) return "fixed level is not in the level list";
    }
  }
  out = c;
  return nullptr;
}

const char* levels_parse(const char* text, LevelList& out) noexcept {
  LevelList l{};
  l.levels[l.count++] = {Method::Raw, 0};
  bool saw_none = false;
  const char* p = text;
  while (*p) {
    const char* end = p;
    while (*end && *end != ',') ++end;
    size_t len = static_cast<size_t>(end - p);
    Level lv{};
    if (len == 4 && std::memcmp(p, "none", 4) == 0) {
      if (saw_none || l.count > 1) return "'none' must come first, once";
      saw_none = true;
    } else if (len == 3 && std::memcmp(p, "lz4", 3) == 0) {
      lv = {Method::Lz4, 0};
    } else if (len > 5 && std::memcmp(p, "zstd:", 5) == 0) {
      const char* q = p + 5;
      int v;
      static_assert(kZstdLevelMin == 1 && kZstdLevelMax == 19, "the messages name the range");
      if (!parse_int(q, end, v) || q != end || v < kZstdLevelMin || v > kZstdLevelMax) return "zstd level must be 1..19";
      lv = {Method::Zstd, static_cast<int8_t>(v)};
    } else {
      return "unknown level (none, lz4, zstd:1..19)";
    }
    if (lv.method != Method::Raw) {
      if (l.count >= kMaxLevels) return "too many levels (at most 8)";
      l.levels[l.count++] = lv;
    }
    p = *end ? end + 1 : end;
  }
  out = l;
  return nullptr;
}

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

}  // namespace bonsai::compress
