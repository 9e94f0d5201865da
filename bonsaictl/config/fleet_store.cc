// SPDX-License-Identifier: MIT
// The fleet store's address (see fleet_store.h).
#include "config/fleet_store.h"

#include <fmt/core.h>

#include "abi/fleet_abi.h"

namespace bonsai::ctl {

namespace {
constexpr std::string_view kForms = "redis://[USER@]HOST:PORT or redis+unix:///PATH";

bool host_char_ok(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
         c == '_' || c == ':';
}
}  // namespace

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
  if (url.rfind("redis://", 0) != 0) {
    if (url.rfind("rediss://", 0) == 0)
      return fmt::format("bad store '{}': TLS is not built into the agent; use stunnel (docs/fleet.md) and {}", url, kForms);
    return fmt::format("bad store '{}' ({})", url, kForms);
  }
  std::string_view rest = url.substr(8);
  if (size_t at = rest.rfind('@'); at != std::string_view::npos) {
    // redis://USER@HOST:PORT (issue 50): an ACL user; its password only from password_file.
    std::string_view user = rest.substr(0, at);
    if (user.find(':') != std::string_view::npos)
      return "bad store: put the password in password_file, not in the address (redis://USER@HOST:PORT)";
    if (user.empty() || user.size() > 64) return fmt::format("bad store '{}': empty or long user before '@'", url);
    for (char c : user)
      if (!host_char_ok(c) || c == ':') return fmt::format("bad store '{}': bad character in the user", url);
    out.user = std::string(user);
    rest = rest.substr(at + 1);
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  std::string_view host, port;
  if (!rest.empty() && rest[0] == '[') {
    size_t close = rest.find(']');
    if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':')
      return fmt::format("bad store '{}': expected [IPV6]:PORT", url);
    host = rest.substr(1, close - 1);
    port = rest.substr(close + 2);
  } else {
    size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos) return fmt::format("bad store '{}': no port ({})", url, kForms);
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return fmt::format("bad store '{}': write an IPv6 address as [ADDR]:PORT", url);
  }
  if (host.empty()) return fmt::format("bad store '{}': no host ({})", url, kForms);
  for (char c : host)
    if (!host_char_ok(c)) return fmt::format("bad store '{}': bad character in the host", url);
  int p = 0;
  bool digits = !port.empty() && port.size() <= 5;
  for (char c : port) digits = digits && c >= '0' && c <= '9', p = p * 10 + (c - '0');
  if (!digits || p < 1 || p > 65535) return fmt::format("bad store '{}': bad port '{}' (1 to 65535)", url, port);
  out.host = std::string(host);
  out.port = p;
  return {};
}

}  // namespace bonsai::ctl
