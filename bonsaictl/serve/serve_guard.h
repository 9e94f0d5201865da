// SPDX-License-Identifier: MIT
// What stands between a client and `serve`'s /metrics: connections per client
// address (loopback exempt), basic auth with a bcrypt budget and a cache of matched
// passwords, client certificates. Called from libmicrohttpd's threads; each guard
// locks its own state. Never blocks on the network.
#pragma once
#include <array>
#include <chrono>
#include <map>
#include <microhttpd.h>
#include <mutex>
#include <string>
#include <sys/socket.h>
#include <unordered_map>

#include "serve/web_config.h"

namespace bonsai::ctl {

inline constexpr unsigned kDefaultMaxPerAddress = 256;
// bcrypt checks a second, all clients together (~0.35 of a core at cost 10): a client
// sending wrong passwords cannot take the CPU. A password that matched once is not
// checked again (its SHA-256 is remembered), so scrapes never wait for this.
inline constexpr double kBcryptPerSecond = 5;

// ---- Connections per client address ----
// libmicrohttpd's own per-IP limit counts loopback addresses too; then a local user
// holding --max-per-address connections from 127.0.0.1 would shut out a Prometheus
// scraping from there. Loopback is exempt here: any local user has all of 127/8 anyway,
// so a bound on one of its addresses protects nothing (the table's size does).
struct PerAddress {
  unsigned limit = kDefaultMaxPerAddress;  // 0: no bound
  std::mutex mu;
  std::unordered_map<std::string, unsigned> open;  // address bytes -> connections
};

// The address's bytes, or "" when it is exempt (loopback: 127/8, ::1, v4-mapped 127/8;
// or no bound).
std::string address_key(const PerAddress& pa, const sockaddr* sa);

// libmicrohttpd's accept policy (cls: PerAddress): MHD_NO for an address that holds
// `limit` connections already.
MHD_Result per_address_accept(void* cls, const sockaddr* sa, socklen_t len);

// MHD_OPTION_NOTIFY_CONNECTION (cls: PerAddress): counts a connection of a bounded
// address from start to close (its key in *socket_ctx).
void per_address_notify(void* cls, MHD_Connection* c, void** socket_ctx, MHD_ConnectionNotificationCode code);

// ---- Basic auth ----
class BasicAuth {
 public:
  enum class Result { Ok, Denied, Busy };
  // Whether `user`:`pass` is one of `users` (basic_auth_users). A match is remembered as
  // its SHA-256 (one bcrypt per user, not per scrape; no password kept); an unknown user
  // costs a bcrypt too (timing). Other checks share kBcryptPerSecond: Busy beyond.
  // Cost: a SHA-256, or one bcrypt (~70 ms at cost 10).
  Result check(const std::map<std::string, std::string>& users, const std::string& user, const std::string& pass);

  // The budget's clock (tests hold it still: a bcrypt's own time must not refill it).
  using Clock = std::chrono::steady_clock::time_point (*)();
  explicit BasicAuth(Clock clock = std::chrono::steady_clock::now) : clock_(clock), refilled_(clock()) {}

 private:
  using Digest = std::array<unsigned char, 32>;
  std::mutex mu_;
  std::map<std::string, Digest> good_;  // user -> SHA-256 of the password that last matched
  double tokens_ = kBcryptPerSecond;
  Clock clock_;
  std::chrono::steady_clock::time_point refilled_;
  bool budget_take();  // with mu_ held
};

// ---- Client certificates ----
// What is wrong with the connection's client certificate when client_auth_type asks
// for one ("" if acceptable): none sent (RequireAndVerifyClientCert), or not signed by
// client_ca_file.
const char* client_cert_problem(const WebConfig& web, MHD_Connection* c);

}  // namespace bonsai::ctl
