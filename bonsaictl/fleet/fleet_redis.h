// SPDX-License-Identifier: MIT
// The fleet agent's connection to Redis (hiredis, blocking, with timeouts): connect,
// AUTH from a password file, the lease script loaded once and called with EVALSHA
// (loaded again on NOSCRIPT: a store restarted empty). Every reply is checked for its
// shape and bounds before use. Only bonsaictl links hiredis; libbonsai.so never does.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

struct redisContext;

namespace bonsai::ctl {

struct LeaseReply {
  uint32_t live = 0;
  bool clash = false;                // another agent called with this host id lately (issue 50)
  std::vector<uint64_t> granted;     // per rule
  std::vector<uint64_t> fleet_used;  // per rule
};

class RedisConn {
 public:
  RedisConn() = default;
  ~RedisConn();
  RedisConn(const RedisConn&) = delete;
  RedisConn& operator=(const RedisConn&) = delete;

  // (Re)connects when not connected, or when `store` or `password_file` changed.
  // @return "" or what failed (one line).
  std::string ensure(const std::string& store, const std::string& password_file, uint64_t timeout_ns);
  void close();

  // Calls the lease script. `args` are the script's ARGV (fleet_script.h), `rules` its
  // rule count. @return "" with `out` filled, or what failed (the connection is closed).
  std::string lease(const std::string& key_prefix, const std::vector<std::string>& args, size_t rules,
                    LeaseReply& out);

  // Any command (stat --fleet reads the fleet's keys): @return "" with the reply's
  // strings (an array's elements, or one element), or what failed.
  std::string command(const std::vector<std::string>& argv, std::vector<std::string>& out);

 private:
  std::string load_script();
  redisContext* ctx_ = nullptr;
  std::string store_, password_file_, sha_;
};

}  // namespace bonsai::ctl
