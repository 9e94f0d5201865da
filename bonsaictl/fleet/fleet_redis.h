// SPDX-License-Identifier: MIT
// The fleet agent's connection to Redis (hiredis, blocking, with timeouts): connect,
// AUTH from a password file, the lease script loaded once and called with EVALSHA
// (loaded again on NOSCRIPT: a store restarted empty). Every reply is checked for its
// shape and bounds before use. Only bonsaictl links hiredis; libbonsai.so never does.
// With a redis+sentinel:// store the Sentinels (fleet_sentinel.h) say which node to
// connect to; the node must say it is the primary (ROLE), and a lost connection, a
// -READONLY or -LOADING answer, or a +switch-master on the Sentinels makes it ask again.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fleet/fleet_sentinel.h"
#include "stat/fleet_status.h"

struct redisContext;

namespace bonsai::ctl {

struct LeaseReply {
  uint32_t live = 0;
  bool clash = false;                // another agent called with this host id lately
  std::vector<uint64_t> granted;     // per rule
  std::vector<uint64_t> fleet_used;  // per rule
};

class RedisConn {
 public:
  RedisConn() = default;
  ~RedisConn();
  RedisConn(const RedisConn&) = delete;
  RedisConn& operator=(const RedisConn&) = delete;

  // (Re)connects when not connected, or when `store` or a password file changed; for a
  // Sentinel store first reads the Sentinels' +switch-master notices (without
  // blocking). @return "" or what failed (one line).
  std::string ensure(const std::string& store, const std::string& password_file, uint64_t timeout_ns,
                     const std::string& sentinel_password_file = {});
  void close();

  // Calls the lease script. `args` are the script's ARGV (fleet_script.h), `rules` its
  // rule count. @return "" with `out` filled, or what failed (the connection is closed).
  // For the first calls on a new connection (two seconds at the default period) the
  // live host count is at least the one seen before it, and the want at most an equal
  // share of those hosts: a store that lost its `live` set (a failover, a restart)
  // counts only the hosts that have called it so far, while the others still run at
  // their fallback; neither a host's fallback (the cap / live hosts) nor its grant may
  // grow from that.
  std::string lease(const std::string& key_prefix, const std::vector<std::string>& args, size_t rules,
                    LeaseReply& out);

  // Any command (stat --fleet reads the fleet's keys): @return "" with the reply's
  // strings (an array's elements, or one element), or what failed.
  std::string command(const std::vector<std::string>& argv, std::vector<std::string>& out);

  const StoreNodeStatus& node_status() const { return node_; }

 private:
  std::string load_script();
  std::string connect_node(const FleetStore& s, uint64_t timeout_ns);
  void lost(const std::string& reason);
  redisContext* ctx_ = nullptr;
  std::string store_, password_file_, sentinel_password_file_, sha_;
  SentinelClient sentinels_;
  StoreNodeStatus node_;
  std::string ask_reason_;     // why the Sentinels are asked again ("" : first time)
  std::string known_;          // the primary last connected to (a different one next is a failover)
  uint32_t live_before_ = 0;   // the live hosts last counted
  uint32_t failed_asks_ = 0;   // Sentinel-store connections failed in a row
  uint64_t ask_after_ns_ = 0;  // no new one before (mono): every host of a fleet retrying each period is a storm
  std::string ask_why_;        // why the last one failed (said again while waiting: said once)
  int cautious_calls_ = 0;     // calls on this connection still to report at least live_before_
};

}  // namespace bonsai::ctl
