// SPDX-License-Identifier: MIT
// Redis through hiredis for the fleet agent (see fleet_redis.h). Replies are
// untrusted: a wrong type, size or value is an error, never a crash or a huge grant.
#include "fleet/fleet_redis.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <hiredis/hiredis.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

#include "fleet/fleet_script.h"
#include "config/fleet_store.h"
#include "config/owned_file.h"
#include "segment/shm_client.h"
#include "sys/clock.h"

namespace bonsai::ctl {

namespace {

struct ReplyFree {
  void operator()(redisReply* r) const { if (r) freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

timeval tv_of(uint64_t ns) {
  return timeval{static_cast<time_t>(ns / 1'000'000'000), static_cast<suseconds_t>(ns % 1'000'000'000 / 1000)};
}

// Calls on a new connection that take the hosts counted before as still there (see lease()).
constexpr int kCautiousCalls = 8;

// A point in [0, range) of a sequence of this process's own (agents started together
// draw different ones).
uint64_t jitter_ns(uint64_t range) {
  static uint64_t x = (mono_ns() ^ (static_cast<uint64_t>(getpid()) << 32)) | 1;
  x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  return x % range;
}

// A reply's integer, or a decimal string of one (Lua numbers come back as integers).
bool reply_u64(const redisReply* r, uint64_t& v) {
  if (!r) return false;
  if (r->type == REDIS_REPLY_INTEGER) {
    if (r->integer < 0) return false;
    v = static_cast<uint64_t>(r->integer);
    return true;
  }
  return false;
}

}  // namespace

RedisConn::~RedisConn() { close(); }

void RedisConn::close() {
  if (ctx_) redisFree(ctx_);
  ctx_ = nullptr;
  sha_.clear();
  node_.primary.clear();
}

void RedisConn::lost(const std::string& reason) {
  ask_reason_ = reason;
  close();
}

std::string RedisConn::ensure(const std::string& store, const std::string& password_file, uint64_t timeout_ns,
                              const std::string& sentinel_password_file) {
  if (store != store_ || password_file != password_file_ || sentinel_password_file != sentinel_password_file_) {
    close();
    sentinels_.close();
    store_ = store;
    password_file_ = password_file;
    sentinel_password_file_ = sentinel_password_file;
    node_ = StoreNodeStatus{};
    known_.clear();
    ask_reason_.clear();
  }
  FleetStore s;
  if (std::string p = fleet_store_parse(store, s); !p.empty()) return close(), p;
  // A Sentinel is asked within a short time of its own: one that does not answer must
  // leave the others time within the period.
  uint64_t sentinel_timeout = timeout_ns < 300'000'000 ? timeout_ns : 300'000'000;
  if (s.sentinel() && sentinels_.switched(s, sentinel_password_file, sentinel_timeout)) {
    if (ctx_) lost("+switch-master");
    else ask_reason_ = "+switch-master";
  }
  if (ctx_) return {};
  if (!s.sentinel()) return connect_node(s, timeout_ns);
  // While no primary answers, the Sentinels are asked again after two failed tries only
  // every 0.5-1 s (at a random point: a fleet's agents spread out), unless a
  // +switch-master says the primary moved: during a failover hundreds of agents asking
  // every period slowed the very Sentinels that decide it (bench/scenarios/fleet_failover.sh).
  uint64_t now = mono_ns();
  if (ask_reason_ != "+switch-master" && now < ask_after_ns_) return ask_why_;
  std::string why = connect_node(s, timeout_ns);
  ask_why_ = why;
  if (why.empty()) {
    failed_asks_ = 0;
    ask_after_ns_ = 0;
  } else if (++failed_asks_ >= 2) {
    ask_after_ns_ = mono_ns() + 500'000'000 + jitter_ns(500'000'000);
  }
  return why;
}

std::string RedisConn::connect_node(const FleetStore& s, uint64_t timeout_ns) {
  std::string pw;  // read before connecting: a refused file means no connection at all,
                   // not even a Sentinel asked
  if (!password_file_.empty()) {
    std::string why;
    pw = owned_password_read("password_file", password_file_, why);
    if (!why.empty()) return why;
  }
  FleetHostPort node{s.host, s.port};
  if (s.sentinel()) {
    uint64_t sentinel_timeout = timeout_ns < 300'000'000 ? timeout_ns : 300'000'000;
    if (std::string why = sentinels_.primary(s, sentinel_password_file_, sentinel_timeout, node); !why.empty())
      return why;
    node_.sentinel = sentinels_.answered_by();
  }
  std::string addr = s.unix_path.empty() ? fleet_host_port_text(node) : s.unix_path;
  timeval tv = tv_of(timeout_ns);
  ctx_ = s.unix_path.empty() ? redisConnectWithTimeout(node.host.c_str(), node.port, tv)
                             : redisConnectUnixWithTimeout(s.unix_path.c_str(), tv);
  if (!ctx_ || ctx_->err) {
    std::string why = fmt::format("cannot connect to {}{}: {}", store_, s.sentinel() ? " primary " + addr : "",
                                  ctx_ ? ctx_->errstr : "out of memory");
    lost("connection lost");
    return why;
  }
  redisSetTimeout(ctx_, tv);
  if (!password_file_.empty()) {
    std::string why;
    // An ACL user (redis://USER@HOST:PORT): AUTH USER PASSWORD; else the default user's.
    Reply r(static_cast<redisReply*>(
        s.user.empty() ? redisCommand(ctx_, "AUTH %b", pw.data(), pw.size())
                       : redisCommand(ctx_, "AUTH %b %b", s.user.data(), s.user.size(), pw.data(), pw.size())));
    if (!r || r->type == REDIS_REPLY_ERROR) {
      why = fmt::format("AUTH{} at {} failed: {}", s.user.empty() ? "" : " as " + s.user, addr,
                        r ? r->str : ctx_->errstr);
      return close(), why;
    }
  }
  if (s.sentinel()) {
    // The Sentinels' word is checked with the node's own: right after a failover a
    // Sentinel may still name the old primary, come back as a replica.
    Reply r(static_cast<redisReply*>(redisCommand(ctx_, "ROLE")));
    bool master = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 && r->element[0]->type == REDIS_REPLY_STRING &&
                  std::string_view(r->element[0]->str, r->element[0]->len) == "master";
    if (!master) {
      std::string why = fmt::format("{} named {} the primary, but its ROLE is not master{}", node_.sentinel, addr,
                                    r && r->type == REDIS_REPLY_ERROR ? ": " + std::string(r->str, r->len).substr(0, 200) : "");
      lost("ROLE not master");
      return why;
    }
  }
  if (std::string why = load_script(); !why.empty()) return why;
  if (s.sentinel() && !known_.empty() && known_ != addr) {
    node_.failovers++;
    node_.last_failover_unix_ns = unix_now_ns();
    node_.last_from = known_;
    node_.last_to = addr;
    node_.last_reason = ask_reason_.empty() ? "connection lost" : ask_reason_;
  }
  known_ = addr;
  node_.primary = addr;
  ask_reason_.clear();
  cautious_calls_ = live_before_ ? kCautiousCalls : 0;
  return {};
}

std::string RedisConn::load_script() {
  Reply r(static_cast<redisReply*>(
      redisCommand(ctx_, "SCRIPT LOAD %b", kFleetLeaseScript.data(), kFleetLeaseScript.size())));
  if (!r || r->type != REDIS_REPLY_STRING || r->len != 40) {
    std::string why = fmt::format("SCRIPT LOAD at {} failed: {}", store_,
                                  !r ? ctx_->errstr : r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    close();
    return why;
  }
  sha_.assign(r->str, r->len);
  return {};
}

std::string RedisConn::lease(const std::string& key_prefix, const std::vector<std::string>& given, size_t rules,
                             LeaseReply& out) {
  if (!ctx_) return "not connected";
  std::vector<std::string> args = given;
  if (cautious_calls_ > 0 && live_before_ > 1 && args.size() == 4 + 4 * rules) {
    // The first calls on a new connection ask for at most an equal share of the hosts
    // counted before: the hosts that have not reached the new store yet still run at
    // their fallback (cap / those hosts), and a share level computed from the first
    // callers alone would give these the whole cap on top.
    uint64_t period_us = std::strtoull(args[2].c_str(), nullptr, 10);
    for (size_t r = 0; r < rules; ++r) {
      uint64_t cap = std::strtoull(args[4 + 4 * r].c_str(), nullptr, 10);
      uint64_t want = std::strtoull(args[5 + 4 * r].c_str(), nullptr, 10);
      uint64_t share = static_cast<uint64_t>(static_cast<double>(cap) * static_cast<double>(period_us) / 1e6 / live_before_);
      if (share < 1) share = 1;
      if (want > share) args[5 + 4 * r] = std::to_string(share);
    }
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::vector<const char*> argv{"EVALSHA", sha_.c_str(), "1", key_prefix.c_str()};
    std::vector<size_t> lens{7, sha_.size(), 1, key_prefix.size()};
    for (const auto& a : args) argv.push_back(a.c_str()), lens.push_back(a.size());
    Reply r(static_cast<redisReply*>(redisCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data())));
    if (!r) {
      std::string why = fmt::format("{}: {}", store_, ctx_->errstr[0] ? ctx_->errstr : "no reply");
      lost("connection lost");
      return why;
    }
    if (r->type == REDIS_REPLY_ERROR) {
      std::string err(r->str, r->len);
      if (attempt == 0 && err.rfind("NOSCRIPT", 0) == 0) {  // the store restarted empty
        if (std::string why = load_script(); !why.empty()) return why;
        continue;
      }
      // A primary demoted to a replica (READONLY), or a node still loading its data:
      // the primary is elsewhere, or soon will be; a Sentinel store asks again.
      if (err.rfind("READONLY", 0) == 0) lost("-READONLY");
      else if (err.rfind("LOADING", 0) == 0) lost("-LOADING");
      else close();
      return fmt::format("{}: {}", store_, err.substr(0, 200));
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 + 2 * rules) {
      close();
      return fmt::format("{}: unexpected reply to the lease script (type {}, {} elements)", store_, r->type,
                         r->type == REDIS_REPLY_ARRAY ? r->elements : 0);
    }
    uint64_t live = 0, clash = 0;
    if (!reply_u64(r->element[0], live) || live < 1 || live > 100'000'000 || !reply_u64(r->element[1], clash) ||
        clash > 1) {
      close();
      return fmt::format("{}: bad live host count or clash flag in the lease reply", store_);
    }
    out.live = static_cast<uint32_t>(live);
    if (cautious_calls_ > 0) {
      --cautious_calls_;
      if (out.live < live_before_) out.live = live_before_;
    }
    live_before_ = out.live;
    out.clash = clash == 1;
    out.granted.assign(rules, 0);
    out.fleet_used.assign(rules, 0);
    for (size_t i = 0; i < rules; ++i)
      if (!reply_u64(r->element[2 + 2 * i], out.granted[i]) || !reply_u64(r->element[3 + 2 * i], out.fleet_used[i])) {
        close();
        return fmt::format("{}: bad number in the lease reply", store_);
      }
    return {};
  }
  return "NOSCRIPT after loading the script";
}

std::string RedisConn::command(const std::vector<std::string>& args, std::vector<std::string>& out) {
  out.clear();
  if (!ctx_) return "not connected";
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) argv.push_back(a.c_str()), lens.push_back(a.size());
  Reply r(static_cast<redisReply*>(redisCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data())));
  if (!r) {
    std::string why = fmt::format("{}: {}", store_, ctx_->errstr);
    lost("connection lost");
    return why;
  }
  auto text = [](const redisReply* e) {
    if (e->type == REDIS_REPLY_STRING || e->type == REDIS_REPLY_STATUS) return std::string(e->str, e->len);
    if (e->type == REDIS_REPLY_INTEGER) return std::to_string(e->integer);
    return std::string();
  };
  if (r->type == REDIS_REPLY_ERROR) return fmt::format("{}: {}", store_, std::string(r->str, r->len).substr(0, 200));
  if (r->type == REDIS_REPLY_ARRAY) {
    for (size_t i = 0; i < r->elements && i < 4'000'000; ++i) out.push_back(text(r->element[i]));
  } else if (r->type != REDIS_REPLY_NIL) {
    out.push_back(text(r.get()));
  }
  return {};
}

}  // namespace bonsai::ctl
