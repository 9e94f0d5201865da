// SPDX-License-Identifier: MIT
// The lease script (see fleet_script.h). Per rule: a max-min share of one period's cap
// among the wants of the live hosts, bounded by a GCRA on Redis TIME that debits a
// grant when it is made (depth two periods: hosts call at their own phase of the
// period). A host is live while it called within three periods; every key expires
// when the whole fleet has been gone for a while. Numbers are formatted with %.0f:
// Lua's tostring would write a microsecond clock as 1.7e+15.
#include "fleet/fleet_script.h"

namespace bonsai::ctl {

const std::string_view kFleetLeaseScript = R"LUA(
if redis.replicate_commands then redis.replicate_commands() end
local p = KEYS[1]
local host = ARGV[1]
local period = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
if not p or not host or host == '' or not period or period <= 0 or not n or n < 0 or n > 64 or #ARGV ~= 3 + 4 * n then
  return redis.error_reply('ERR bonsai lease: bad arguments')
end
local function f(x) return string.format('%.0f', x) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ttl = f(math.max(60000, period * 40 / 1000))
local lk = p .. 'live'
local oldest = '(' .. f(now - 3 * period)
local dead = redis.call('ZRANGEBYSCORE', lk, '-inf', oldest)
redis.call('ZREMRANGEBYSCORE', lk, '-inf', oldest)
redis.call('ZADD', lk, f(now), host)
redis.call('PEXPIRE', lk, ttl)
local hosts = redis.call('ZRANGE', lk, 0, -1)
local out = {#hosts}
for r = 1, n do
  local a = 3 + (r - 1) * 4
  local rate, want, used, repay = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  if not rate or rate <= 0 or not want or want < 0 or not used or used < 0 or not repay or repay < 0 then
    return redis.error_reply('ERR bonsai lease: bad rule arguments')
  end
  local rk = p .. 'r' .. r .. ':'
  redis.call('HSET', rk .. 'want', host, f(want))
  redis.call('HSET', rk .. 'used', host, f(used))
  if #dead > 0 then
    redis.call('HDEL', rk .. 'want', unpack(dead))
    redis.call('HDEL', rk .. 'used', unpack(dead))
  end
  redis.call('PEXPIRE', rk .. 'want', ttl)
  redis.call('PEXPIRE', rk .. 'used', ttl)
  local wants = redis.call('HMGET', rk .. 'want', unpack(hosts))
  local useds = redis.call('HMGET', rk .. 'used', unpack(hosts))
  local cap = rate * period / 1000000
  local ws, fleet_used = {}, 0
  for i = 1, #hosts do
    ws[i] = tonumber(wants[i]) or 0
    fleet_used = fleet_used + (tonumber(useds[i]) or 0)
  end
  table.sort(ws)
  local left, level = cap, math.huge
  for i = 1, #ws do
    local share = left / (#ws - i + 1)
    if ws[i] > share then level = share break end
    left = left - ws[i]
  end
  local tk = rk .. 'tat'
  local tat = tonumber(redis.call('GET', tk)) or now
  if tat < now then tat = now end
  tat = tat + repay * 1000000 / rate
  if tat > now + 100 * period then tat = now + 100 * period end
  local avail = (now + 2 * period - tat) * rate / 1000000
  local g = math.floor(math.min(want, level, avail))
  if g < 0 then g = 0 end
  tat = tat + g * 1000000 / rate
  redis.call('SET', tk, f(tat), 'PX', ttl)
  out[#out + 1] = g
  out[#out + 1] = math.floor(fleet_used)
end
return out
)LUA";

std::string fleet_key_prefix(std::string_view service) {
  return "bonsai:fleet:{" + std::string(service) + "}:";
}

}  // namespace bonsai::ctl
