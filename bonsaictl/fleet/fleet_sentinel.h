// SPDX-License-Identifier: MIT
// The fleet agent's Sentinel client (store: redis+sentinel://..., docs/reference/fleet.md): which
// node is the primary (`SENTINEL get-master-addr-by-name`, each Sentinel asked in
// order with a short timeout), and a subscription to `+switch-master` on one of them,
// polled without blocking in the agent's period loop, that says when to ask again.
// Sentinels' replies are untrusted as the store's are: shape and size checked, an
// address parsed like the store's own.
#pragma once
#include <cstdint>
#include <string>

#include "config/fleet_store.h"

struct redisContext;

namespace bonsai::ctl {

class SentinelClient {
 public:
  SentinelClient() = default;
  ~SentinelClient();
  SentinelClient(const SentinelClient&) = delete;
  SentinelClient& operator=(const SentinelClient&) = delete;

  // Asks the Sentinels of `s` in order for the primary of s.master_name, each within
  // `timeout_ns`; AUTH on them (as s.user when given) with the first line of
  // `password_file` when not empty. @return "" with `out` and answered_by() set, or
  // why no Sentinel named a primary (one line).
  std::string primary(const FleetStore& s, const std::string& password_file, uint64_t timeout_ns, FleetHostPort& out);

  // Reads what the subscription has received, without blocking: true when a
  // `+switch-master` of s.master_name came in (the primary moved: ask again). When no
  // subscription is up it makes one (on the Sentinel that answered last, else the
  // next one in turn), at most once a second, within `timeout_ns`.
  bool switched(const FleetStore& s, const std::string& password_file, uint64_t timeout_ns);

  const std::string& answered_by() const { return answered_by_; }
  void close();

 private:
  void subscribe(const FleetStore& s, const std::string& password_file, uint64_t timeout_ns);
  redisContext* sub_ = nullptr;  // SUBSCRIBE +switch-master, read when poll() says so
  std::string answered_by_;      // HOST:PORT of the Sentinel that named the primary last
  size_t next_sub_ = 0;          // the Sentinel to subscribe on next when none answered
  uint64_t sub_tried_ns_ = 0;
};

}  // namespace bonsai::ctl
