// SPDX-License-Identifier: MIT
// The lease script (see fleet_script.h). Per rule: a max-min share of one period's cap
// among the wants of the live hosts, bounded by a GCRA on Redis TIME that debits a
// grant when it is made (depth two periods: hosts call at their own phase of the
// period). A host is live while it called within three periods; every key expires
// when the whole fleet has been gone for a while. Numbers are formatted with %.0f:
// Lua's tostring would write a microsecond clock as 1.7e+15.
//
// Scale: a call's own work is O(log hosts) -- the wants are a sorted set,
// dead hosts are dropped at most 64 per call (each host dies once), nothing is
// unpack()ed -- and the share level and the fleet's use are computed at most once a
// period per rule (a walk of the sorted wants and of the reported uses, O(hosts)),
// kept in the rule's `lvl` hash for the other calls of that period. So Redis's work
// per period grows linearly with the hosts, with no limit short of its memory.
//
// Host-id clash: each agent sends a token of its own (random per start).
// The host's token changing is a restart; changing again within ten periods means
// two agents call with one id (or one restarting over and over: worth saying too).
// Ten, not one or two: two agents on a starved machine miss periods. It is kept in the
// `clash` hash and returned for thirty periods after.
//
// Lost state: a GCRA found missing (a new primary that lacks the last writes: Redis
// replicates asynchronously; a store restarted empty; a new fleet) or untouched for
// three periods (no host of the fleet reached this store: an outage, a failover, while
// every host ran at its grant, then its fallback) starts a depth behind: the store's
// clock is taken as if it stood a depth ahead, so the first grants grow at the cap's
// rate from that call on and a failover costs under the cap, never a fresh depth on
// top of what the hosts used meanwhile. A live fleet calls every period, so a GCRA it
// uses is never that old. When every want fits under the cap, the level kept for the
// period is the larger of the largest want and an equal part of the cap, where it was
// unbounded (-1). The keys and their meaning are those of release 0.2.0: an older
// script sharing them during a rolling upgrade reads such a TAT as a spent depth, and
// such a level as a level; this one reads an older script's -1 as unbounded, as it did.
#include "fleet/fleet_script.h"

namespace bonsai::ctl {

const std::string_view kFleetLeaseScript = R"LUA(
if redis.replicate_commands then redis.replicate_commands() end
local p = KEYS[1]
local host, token = ARGV[1], ARGV[2]
local period = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
if not p or not host or host == '' or not token or token == '' or not period or period <= 0 or not n or n < 0
   or n > 64 or #ARGV ~= 4 + 4 * n then
  return redis.error_reply('ERR bonsai lease: bad arguments')
end
local function f(x) return string.format('%.0f', x) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ttl = f(math.max(60000, period * 40 / 1000))
local lk, ik, fk, ck = p .. 'live', p .. 'inst', p .. 'flip', p .. 'clash'
local oldest = now - 3 * period
local dead = redis.call('ZRANGEBYSCORE', lk, '-inf', '(' .. f(oldest), 'LIMIT', 0, 64)
for _, d in ipairs(dead) do
  redis.call('ZREM', lk, d)
  redis.call('HDEL', ik, d)
  redis.call('HDEL', fk, d)
  redis.call('HDEL', ck, d)
  for r = 1, n do
    redis.call('ZREM', p .. 'r' .. r .. ':wz', d)
    redis.call('HDEL', p .. 'r' .. r .. ':used', d)
  end
end
local cur = redis.call('HGET', ik, host)
if cur ~= token then
  if cur then
    local last = tonumber(redis.call('HGET', fk, host))
    if last and now - last < 10 * period then redis.call('HSET', ck, host, f(now)) end
    redis.call('HSET', fk, host, f(now))
  end
  redis.call('HSET', ik, host, token)
end
local clash = 0
local ct = tonumber(redis.call('HGET', ck, host))
if ct and now - ct < 30 * period then clash = 1 end
redis.call('ZADD', lk, f(now), host)
for _, k in ipairs({lk, ik, fk, ck}) do redis.call('PEXPIRE', k, ttl) end
local out = {redis.call('ZCOUNT', lk, f(oldest), '+inf'), clash}
for r = 1, n do
  local a = 4 + (r - 1) * 4
  local rate, want, used, repay = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  if not rate or rate <= 0 or not want or want < 0 or not used or used < 0 or not repay or repay < 0 then
    return redis.error_reply('ERR bonsai lease: bad rule arguments')
  end
  local rk = p .. 'r' .. r .. ':'
  local wz, uk, lv = rk .. 'wz', rk .. 'used', rk .. 'lvl'
  redis.call('ZADD', wz, f(want), host)
  redis.call('HSET', uk, host, f(used))
  local cap = rate * period / 1000000
  local st = redis.call('HMGET', lv, 't', 'level', 'used')
  local lt, level, fleet_used = tonumber(st[1]), tonumber(st[2]), tonumber(st[3])
  if not lt or not level or not fleet_used or now < lt or now - lt >= period then
    -- The level: wants below it are granted whole, the rest split what they leave.
    local nz = redis.call('ZCARD', wz)
    local left, i, done, mw = cap, 0, false, 0
    level = -1
    while not done and i < nz do
      local c = redis.call('ZRANGE', wz, i, i + 999, 'WITHSCORES')
      if #c == 0 then break end
      for j = 2, #c, 2 do
        local w = tonumber(c[j]) or 0
        local share = left / (nz - i)
        if w > share then level = share done = true break end
        left = left - w
        mw = w
        i = i + 1
      end
    end
    -- Every want fits: the level bounds a host whose want rises before the next
    -- level all the same, at the larger of the largest want and an equal part of the
    -- cap (not unbounded: after a time under the cap the GCRA holds a whole depth, and
    -- one host could take it in one period on top of the others' grants).
    if level < 0 and nz > 0 then level = math.max(mw, cap / nz) end
    fleet_used = 0
    for _, u in ipairs(redis.call('HVALS', uk)) do fleet_used = fleet_used + (tonumber(u) or 0) end
    redis.call('HSET', lv, 't', f(now), 'level', level < 0 and '-1' or string.format('%.3f', level), 'used', f(fleet_used))
  end
  if level < 0 then level = math.huge end
  for _, k in ipairs({wz, uk, lv}) do redis.call('PEXPIRE', k, ttl) end
  local tk = rk .. 'tat'
  local tat = tonumber(redis.call('GET', tk))
  if not tat or tat < now - 3 * period then tat = now + 2 * period end
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

std::string fleet_key_prefix(std::string_view fleet_namespace, std::string_view service) {
  if (fleet_namespace.empty()) return "bonsai:fleet:{" + std::string(service) + "}:";
  return "bonsai:fleet:" + std::string(fleet_namespace) + ":{" + std::string(service) + "}:";
}

}  // namespace bonsai::ctl
