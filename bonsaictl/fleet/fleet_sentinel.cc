// SPDX-License-Identifier: MIT
// Sentinels for the fleet agent (see fleet_sentinel.h).
#include "fleet/fleet_sentinel.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <hiredis/hiredis.h>
#include <memory>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/owned_file.h"
#include "sys/clock.h"

namespace bonsai::ctl {

namespace {

struct ReplyFree {
  void operator()(redisReply* r) const { if (r) freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

// What a subscription may hold unread before it is dropped: a Sentinel that floods it
// costs a reconnect, never memory.
constexpr size_t kSubBufferMax = 64 * 1024;
constexpr int kSubRepliesPerPoll = 64;

timeval tv_of(uint64_t ns) {
  return timeval{static_cast<time_t>(ns / 1'000'000'000), static_cast<suseconds_t>(ns % 1'000'000'000 / 1000)};
}

bool is_string(const redisReply* r) { return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS); }

// Connects to one Sentinel and AUTHs. @return the context, or nullptr with `why`.
redisContext* sentinel_connect(const FleetStore& s, const FleetHostPort& hp, const std::string& password_file,
                               uint64_t timeout_ns, std::string& why) {
  std::string pw;  // read before connecting: a refused file means no Sentinel is even asked
  if (!password_file.empty()) {
    pw = owned_password_read("sentinel_password_file", password_file, why);
    if (!why.empty()) return nullptr;
  }
  timeval tv = tv_of(timeout_ns);
  redisContext* c = redisConnectWithTimeout(hp.host.c_str(), hp.port, tv);
  if (!c || c->err) {
    why = fmt::format("Sentinel {}: {}", fleet_host_port_text(hp), c ? c->errstr : "out of memory");
    if (c) redisFree(c);
    return nullptr;
  }
  redisSetTimeout(c, tv);
  if (!password_file.empty()) {
    Reply r(static_cast<redisReply*>(
        s.user.empty() ? redisCommand(c, "AUTH %b", pw.data(), pw.size())
                       : redisCommand(c, "AUTH %b %b", s.user.data(), s.user.size(), pw.data(), pw.size())));
    if (!r || r->type == REDIS_REPLY_ERROR) {
      why = fmt::format("AUTH{} at Sentinel {} failed: {}", s.user.empty() ? "" : " as " + s.user,
                        fleet_host_port_text(hp), r ? std::string(r->str, r->len).substr(0, 200) : c->errstr);
      redisFree(c);
      return nullptr;
    }
  }
  return c;
}

}  // namespace

SentinelClient::~SentinelClient() { close(); }

void SentinelClient::close() {
  if (sub_) redisFree(sub_);
  sub_ = nullptr;
}

std::string SentinelClient::primary(const FleetStore& s, const std::string& password_file, uint64_t timeout_ns,
                                    FleetHostPort& out) {
  std::string whys;
  for (const FleetHostPort& hp : s.sentinels) {
    std::string why;
    redisContext* c = sentinel_connect(s, hp, password_file, timeout_ns, why);
    if (c) {
      Reply r(static_cast<redisReply*>(redisCommand(c, "SENTINEL get-master-addr-by-name %b", s.master_name.data(),
                                                    s.master_name.size())));
      if (!r) {
        why = fmt::format("Sentinel {}: {}", fleet_host_port_text(hp), c->errstr[0] ? c->errstr : "no reply");
      } else if (r->type == REDIS_REPLY_NIL) {
        why = fmt::format("Sentinel {} does not know '{}'", fleet_host_port_text(hp), s.master_name);
      } else if (r->type == REDIS_REPLY_ERROR) {
        why = fmt::format("Sentinel {}: {}", fleet_host_port_text(hp), std::string(r->str, r->len).substr(0, 200));
      } else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !is_string(r->element[0]) ||
                 !is_string(r->element[1]) || r->element[0]->len > 300 || r->element[1]->len > 8) {
        why = fmt::format("Sentinel {}: unexpected reply to get-master-addr-by-name", fleet_host_port_text(hp));
      } else {
        std::string host(r->element[0]->str, r->element[0]->len), port(r->element[1]->str, r->element[1]->len);
        // The answer goes through the store's own address parser: a host with odd
        // characters or a port out of range is refused, not connected to.
        FleetHostPort got;
        std::string addr = host.find(':') != std::string::npos ? "[" + host + "]:" + port : host + ":" + port;
        if (std::string bad = fleet_host_port_parse(addr, got); !bad.empty()) {
          why = fmt::format("Sentinel {} named a bad primary address: {}", fleet_host_port_text(hp), bad);
        } else {
          redisFree(c);
          out = got;
          answered_by_ = fleet_host_port_text(hp);
          return {};
        }
      }
      redisFree(c);
    }
    whys += (whys.empty() ? "" : "; ") + why;
  }
  return fmt::format("no Sentinel named a primary for '{}' ({})", s.master_name, whys);
}

void SentinelClient::subscribe(const FleetStore& s, const std::string& password_file, uint64_t timeout_ns) {
  const FleetHostPort* hp = nullptr;
  for (const auto& one : s.sentinels)
    if (fleet_host_port_text(one) == answered_by_) hp = &one;
  if (!hp) hp = &s.sentinels[next_sub_++ % s.sentinels.size()];
  std::string why;
  redisContext* c = sentinel_connect(s, *hp, password_file, timeout_ns, why);
  if (!c) {
    answered_by_.clear();  // the next try goes to the next Sentinel
    return;
  }
  Reply r(static_cast<redisReply*>(redisCommand(c, "SUBSCRIBE +switch-master")));
  if (!r || r->type != REDIS_REPLY_ARRAY) {
    redisFree(c);
    answered_by_.clear();
    return;
  }
  sub_ = c;
}

bool SentinelClient::switched(const FleetStore& s, const std::string& password_file, uint64_t timeout_ns) {
  if (!s.sentinel()) return false;
  if (!sub_) {
    uint64_t now = mono_ns();
    if (sub_tried_ns_ && now - sub_tried_ns_ < 1'000'000'000) return false;
    sub_tried_ns_ = now;
    subscribe(s, password_file, timeout_ns);
    return false;
  }
  bool moved = false;
  pollfd p{sub_->fd, POLLIN, 0};
  // Readable: one read() takes what is there (it cannot block); EOF or an error ends
  // the subscription (made again on a later period). Then every reply the reader
  // holds, those that came in with the SUBSCRIBE's answer too.
  if (poll(&p, 1, 0) > 0 &&
      (redisBufferRead(sub_) != REDIS_OK || (sub_->reader && sub_->reader->len > kSubBufferMax))) {
    close();
    return false;
  }
  for (int i = 0; i < kSubRepliesPerPoll; ++i) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(sub_, &raw) != REDIS_OK) {
      close();
      return moved;
    }
    if (!raw) break;
    Reply r(static_cast<redisReply*>(raw));
    // ["message", "+switch-master", "NAME OLD_IP OLD_PORT NEW_IP NEW_PORT"]
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || !is_string(r->element[0]) || !is_string(r->element[2]))
      continue;
    std::string_view kind(r->element[0]->str, r->element[0]->len), body(r->element[2]->str, r->element[2]->len);
    if (kind == "message" && body.substr(0, body.find(' ')) == s.master_name) moved = true;
  }
  return moved;
}

}  // namespace bonsai::ctl
