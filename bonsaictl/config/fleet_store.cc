// SPDX-License-Identifier: MIT
// The fleet store's address (see fleet_store.h).
#include "config/fleet_store.h"

#include <cstring>
#include <fmt/core.h>

#include "abi/fleet_abi.h"

namespace bonsai::ctl {

namespace {
constexpr std::string_view kForms =
    "redis://[USER@]HOST:PORT, redis+unix:///PATH or redis+sentinel://[USER@]HOST:PORT[,HOST:PORT...]/MASTER_NAME";

bool host_char_ok(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
         c == '_' || c == ':';
}

// USER@ at the start of `rest` (an ACL user; its password only from a password file).
std::string user_take(std::string_view url, std::string_view& rest, FleetStore& out) {
  size_t at = rest.rfind('@');
  if (at == std::string_view::npos) return {};
  std::string_view user = rest.substr(0, at);
  if (user.find(':') != std::string_view::npos)
    return "bad store: put the password in password_file, not in the address (redis://USER@HOST:PORT)";
  if (user.empty() || user.size() > 64) return fmt::format("bad store '{}': empty or long user before '@'", url);
  for (char c : user)
    if (!host_char_ok(c) || c == ':') return fmt::format("bad store '{}': bad character in the user", url);
  out.user = std::string(user);
  rest = rest.substr(at + 1);
  return {};
}
}  // namespace

std::string fleet_host_port_parse(std::string_view rest, FleetHostPort& out) {
  std::string_view host, port;
  if (!rest.empty() && rest[0] == '[') {
    size_t close = rest.find(']');
    if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':')
      return "expected [IPV6]:PORT";
    host = rest.substr(1, close - 1);
    port = rest.substr(close + 2);
  } else {
    size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos) return "no port";
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return "write an IPv6 address as [ADDR]:PORT";
  }
  if (host.empty()) return "no host";
  if (host.size() > 255) return "host name too long";
  for (char c : host)
    if (!host_char_ok(c)) return "bad character in the host";
  int p = 0;
  bool digits = !port.empty() && port.size() <= 5;
  for (char c : port) digits = digits && c >= '0' && c <= '9', p = p * 10 + (c - '0');
  if (!digits || p < 1 || p > 65535) return fmt::format("bad port '{}' (1 to 65535)", port);
  out.host = std::string(host);
  out.port = p;
  return {};
}

std::string fleet_host_port_text(const FleetHostPort& hp) {
  return hp.host.find(':') != std::string::npos ? fmt::format("[{}]:{}", hp.host, hp.port)
                                                 : fmt::format("{}:{}", hp.host, hp.port);
}

std::string fleet_store_parse(std::string_view url, FleetStore& out) {
  out = FleetStore{};
  if (url.size() >= kFleetStoreMax) return fmt::format("store address too long (at most {} bytes)", kFleetStoreMax - 1);
  if (url.rfind("redis+unix://", 0) == 0) {
    std::string_view path = url.substr(13);
    if (path.empty() || path[0] != '/') return fmt::format("bad store '{}': the socket path must be absolute ({})", url, kForms);
    if (path.find('\0') != std::string_view::npos) return "bad store: NUL in the path";
    out.unix_path = std::string(path);
    return {};
  }
  if (url.rfind("redis+sentinel://", 0) == 0) {
    std::string_view rest = url.substr(17);
    size_t slash = rest.find('/');
    if (slash == std::string_view::npos)
      return fmt::format("bad store '{}': no /MASTER_NAME after the Sentinels ({})", url, kForms);
    std::string_view name = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (std::string why = user_take(url, rest, out); !why.empty()) return why;
    // The name the Sentinels monitor the primary by (`sentinel monitor NAME ...`).
    bool ok = !name.empty() && name.size() <= kFleetMasterNameMax;
    for (char c : name)
      ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                  c == '_');
    if (!ok)
      return fmt::format("bad store '{}': bad master name '{}' (1-{} of A-Z a-z 0-9 . - _)", url, name,
                         kFleetMasterNameMax);
    out.master_name = std::string(name);
    while (true) {
      size_t comma = rest.find(',');
      std::string_view one = rest.substr(0, comma);
      FleetHostPort hp;
      if (std::string why = fleet_host_port_parse(one, hp); !why.empty())
        return fmt::format("bad store '{}': Sentinel '{}': {}", url, one, why);
      if (out.sentinels.size() == kFleetSentinelsMax)
        return fmt::format("bad store '{}': more than {} Sentinels", url, kFleetSentinelsMax);
      out.sentinels.push_back(std::move(hp));
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
    return {};
  }
  if (url.rfind("redis://", 0) != 0) {
    if (url.rfind("rediss://", 0) == 0)
      return fmt::format("bad store '{}': TLS is not built into the agent; use stunnel (docs/reference/fleet.md) and {}", url, kForms);
    return fmt::format("bad store '{}' ({})", url, kForms);
  }
  std::string_view rest = url.substr(8);
  if (std::string why = user_take(url, rest, out); !why.empty()) return why;
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  FleetHostPort hp;
  if (std::string why = fleet_host_port_parse(rest, hp); !why.empty()) {
    if (why == "no port" || why == "no host") why += fmt::format(" ({})", kForms);
    return fmt::format("bad store '{}': {}", url, why);
  }
  out.host = std::move(hp.host);
  out.port = hp.port;
  return {};
}

}  // namespace bonsai::ctl
