// SPDX-License-Identifier: MIT
// Parser of the limit language (see limit_parse.h). Hand-written, allocation-free,
// so that it can run inside the host process's constructor.
#include "abi/limit_parse.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sys/div128.h"

namespace bonsai {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

struct UnitInfo {
  std::string_view name;
  uint64_t factor;
};
constexpr UnitInfo kUnits[] = {
    {"B", 1},          {"KB", 1000},          {"kB", 1000},          {"MB", 1000000},
    {"GB", 1000000000}, {"TB", 1000000000000}, {"KiB", 1ull << 10},  {"MiB", 1ull << 20},
    {"GiB", 1ull << 30}, {"TiB", 1ull << 40},
};

// Splits "12.5MiB" into the number and the unit; parses the number as value*10^-frac_digits.
bool number_parse(std::string_view s, uint64_t& mantissa, unsigned& frac_digits,
                  std::string_view& rest) {
  size_t i = 0;
  mantissa = 0;
  frac_digits = 0;
  bool digits = false, dot = false;
  for (; i < s.size(); ++i) {
    char ch = s[i];
    if (ch >= '0' && ch <= '9') {
      if (mantissa > (UINT64_MAX - 9) / 10) return false;
      mantissa = mantissa * 10 + static_cast<uint64_t>(ch - '0');
      digits = true;
      if (dot) ++frac_digits;
      if (frac_digits > 9) return false;
    } else if (ch == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  rest = s.substr(i);
  return digits;
}

// value = mantissa / 10^frac * factor, rounded; false on overflow.
bool scale(uint64_t mantissa, unsigned frac, uint64_t factor, uint64_t& out) {
  uint64_t div = 1;  // frac <= 9 (number_parse): fits
  for (unsigned i = 0; i < frac; ++i) div *= 10;
  unsigned __int128 v = static_cast<unsigned __int128>(mantissa) * factor + div / 2;
  return div128(static_cast<uint64_t>(v >> 64), static_cast<uint64_t>(v), div, out);
}

enum class Exact { Ok, TooFine, TooLarge };

// value = mantissa / 10^frac * factor in millionths, exactly: TooFine if it has a part
// smaller than a millionth (a rate is never rounded, issue "every word true").
Exact exact_micro(uint64_t mantissa, unsigned frac, uint64_t factor, uint64_t& micro) {
  uint64_t div = 1;  // frac <= 9 (number_parse): fits
  for (unsigned i = 0; i < frac; ++i) div *= 10;
  unsigned __int128 v = static_cast<unsigned __int128>(mantissa) * factor;
  if (v >> 64) return Exact::TooLarge;
  v *= kRateMicro;  // < 2^84: no overflow
  uint64_t q;
  if (!div128(static_cast<uint64_t>(v >> 64), static_cast<uint64_t>(v), div, q)) return Exact::TooLarge;
  if (static_cast<unsigned __int128>(q) * div != v) return Exact::TooFine;
  micro = q;
  return Exact::Ok;
}

bool unit_factor(std::string_view unit, uint64_t& factor) {
  if (unit.empty()) {
    factor = 1;
    return true;
  }
  for (const auto& u : kUnits)
    if (u.name == unit) {
      factor = u.factor;
      return true;
    }
  return false;
}

struct Parser {
  std::string_view text;
  ParseError& err;
  std::string_view ceil_text_{};  // where the last rule's ceil= was written (for its error)

  bool fail(std::string_view at, const char* fmt, std::string_view arg = {}) {
    err.offset = at.data() >= text.data() && at.data() <= text.data() + text.size()
                     ? static_cast<size_t>(at.data() - text.data())
                     : 0;
    err.length = at.empty() ? 1 : at.size();
    std::snprintf(err.message, sizeof err.message, fmt, static_cast<int>(arg.size()), arg.data());
    return false;
  }

  bool parse_calls(std::string_view s, CallMask& mask) {
    mask = 0;
    if (s.empty()) return fail(s, "missing call name before '='");
    while (true) {
      size_t plus = s.find('+');
      std::string_view name = trim(s.substr(0, plus));
      CallMask m = call_mask_from_name(name);
      if (m == 0) {
        std::string_view hint = call_name_suggest(name);
        if (!hint.empty()) {
          char buf[64];
          std::snprintf(buf, sizeof buf, "%.*s", static_cast<int>(hint.size()), hint.data());
          fail(name, "unknown call '%.*s'", name);
          size_t used = std::strlen(err.message);
          std::snprintf(err.message + used, sizeof err.message - used, " (did you mean '%s'?)", buf);
          return false;
        }
        return fail(name, "unknown call '%.*s'", name);
      }
      if (mask & m) return fail(name, "call '%.*s' named twice in one rule", name);
      mask |= m;
      if (plus == std::string_view::npos) return true;
      s = s.substr(plus + 1);
    }
  }

  // A rate, exactly: `rule.rate` and `rule.rate_less_micro` (rule_set_rate_micro).
  bool parse_rate(std::string_view s, Rule& rule) {
    std::string_view orig = s;
    if (s.size() < 2 || s.substr(s.size() - 2) != "/s")
      return fail(orig, "rate '%.*s' must end in '/s' (like 10MiB/s or 200/s)", orig);
    s.remove_suffix(2);
    uint64_t mant;
    unsigned frac;
    std::string_view unit;
    if (!number_parse(s, mant, frac, unit)) return fail(orig, "bad rate '%.*s'", orig);
    uint64_t factor;
    if (!unit_factor(unit, factor))
      return fail(unit, "unknown unit '%.*s' (use B KB kB MB GB TB KiB MiB GiB TiB, or a bare count/s)", unit);
    rule.unit = unit.empty() ? RateUnit::Calls : RateUnit::Bytes;
    if (mant == 0) return fail(orig, "rate must be > 0 (got '%.*s')", orig);
    uint64_t micro = 0;
    Exact e = exact_micro(mant, frac, factor, micro);
    if (e == Exact::TooLarge || micro > kMaxRate * kRateMicro) return fail(orig, "rate '%.*s' is too large", orig);
    if (e == Exact::TooFine)
      return fail(orig,
                  "rate '%.*s' cannot be kept exactly: bonsai keeps a rate to a millionth of a unit a second "
                  "(write at most 6 decimal places of B/s or calls/s)",
                  orig);
    if (micro < kMinRateMicro)
      return fail(orig, "rate '%.*s' is below the slowest rate bonsai keeps (0.001/s: one unit every 1000 s)", orig);
    rule_set_rate_micro(rule, micro);
    return true;
  }

  // `seen` collects the options already given in this rule (bit 0 burst, bit 1 fd, bit 2 ceil):
  // a second one is an error, never "the last wins".
  bool parse_option(std::string_view opt, Rule& rule, unsigned& seen) {
    size_t eq = opt.find('=');
    std::string_view key = trim(opt.substr(0, eq));
    std::string_view val = eq == std::string_view::npos ? std::string_view{} : trim(opt.substr(eq + 1));
    unsigned bit = key == "burst" ? 1u : key == "fd" ? 2u : key == "ceil" ? 4u : 0u;
    if (bit && (seen & bit)) return fail(opt, "option '%.*s' given twice in one rule", key);
    seen |= bit;
    if (key == "burst") {
      if (!size_parse(val, rule.burst) || rule.burst == 0)
        return fail(val.empty() ? opt : val, "bad burst '%.*s' (a size like 256KiB, > 0)", val);
      return true;
    }
    if (key == "fd") {  // one kind, or several joined by '+' (what `set --merge` leaves a rule)
      rule.fd_mask = 0;
      std::string_view list = val;
      while (true) {
        size_t plus = list.find('+');
        std::string_view k = trim(list.substr(0, plus));
        unsigned kind_bit = k == "socket" ? 1u << static_cast<unsigned>(FdKind::Socket)
                       : k == "file" ? 1u << static_cast<unsigned>(FdKind::File)
                       : k == "pipe" ? 1u << static_cast<unsigned>(FdKind::Pipe) : 0u;
        if (!kind_bit) return fail(k.empty() ? (val.empty() ? opt : val) : k, "bad fd kind '%.*s' (socket, file or pipe)", k);
        rule.fd_mask = static_cast<uint8_t>(rule.fd_mask | kind_bit);
        if (plus == std::string_view::npos) return true;
        list = list.substr(plus + 1);
      }
    }
    if (key == "ceil") {  // shares: checked against the rate once the rule is whole
      Rule c{};
      if (!parse_rate(val, c)) return false;
      if (c.unit != rule.unit) return fail(val.empty() ? opt : val, "ceil '%.*s' is not in the rate's unit", val);
      if (c.rate_less_micro)
        return fail(val, "ceil '%.*s' is not a whole number of units a second (a ceiling is kept in whole units; "
                    "the rate may have a fraction)", val);
      rule.ceil = c.rate;
      ceil_text_ = val.empty() ? opt : val;
      return true;
    }
    return fail(key.empty() ? opt : key, "unknown option '%.*s' (burst=, ceil= or fd=)", key);
  }

  bool parse_rule(std::string_view s, Rule& rule) {
    rule = Rule{};
    rule.fd_mask = kAnyFd;
    size_t eq = s.find('=');
    if (eq == std::string_view::npos) return fail(s, "rule '%.*s' has no '=RATE'", s);
    if (!parse_calls(trim(s.substr(0, eq)), rule.calls)) return false;
    std::string_view rest = s.substr(eq + 1);
    size_t colon = rest.find(':');
    if (!parse_rate(trim(rest.substr(0, colon)), rule)) return false;
    unsigned seen = 0;
    while (colon != std::string_view::npos) {
      rest = rest.substr(colon + 1);
      colon = rest.find(':');
      if (!parse_option(trim(rest.substr(0, colon)), rule, seen)) return false;
    }
    if (rule.ceil && rule.ceil * kRateMicro < rule_rate_micro(rule))
      return fail(ceil_text_, "ceil '%.*s' is below the rule's rate (a ceiling is at least the guaranteed rate)",
                  ceil_text_);
    if (rule.unit == RateUnit::Bytes) {
      for (size_t c = 0; c < kCallCount; ++c) {
        auto id = static_cast<CallId>(c);
        if ((rule.calls & call_bit(id)) && !call_is_data(id))
          return fail(trim(s.substr(0, eq)),
                      "'%.*s' includes a call that moves no data: give it a call rate like 200/s",
                      trim(s.substr(0, eq)));
      }
    }
    return true;
  }
};

}  // namespace

bool size_parse(std::string_view text, uint64_t& bytes) noexcept {
  uint64_t mant, factor;
  unsigned frac;
  std::string_view unit;
  text = trim(text);
  if (!number_parse(text, mant, frac, unit)) return false;
  if (!unit_factor(unit, factor)) return false;
  return scale(mant, frac, factor, bytes) && bytes <= (1ull << 50);
}

bool rate_parse(std::string_view text, uint64_t& rate, RateUnit& unit) noexcept {
  ParseError err;
  return rate_parse(text, rate, unit, err);
}

bool rate_parse(std::string_view text, uint64_t& rate, RateUnit& unit, ParseError& err) noexcept {
  Parser p{text, err};
  Rule r{};
  if (!p.parse_rate(trim(text), r)) return false;
  if (r.rate_less_micro)
    return p.fail(trim(text), "'%.*s' is not a whole number of units a second (this rate is kept in whole units)",
                  trim(text));
  rate = r.rate;
  unit = r.unit;
  return true;
}

bool rate_parse_micro(std::string_view text, uint64_t& micro, RateUnit& unit, ParseError& err) noexcept {
  Parser p{text, err};
  Rule r{};
  if (!p.parse_rate(trim(text), r)) return false;
  micro = rule_rate_micro(r);
  unit = r.unit;
  return true;
}

bool limit_parse(std::string_view text, LimitSet& out, ParseError& err) noexcept {
  Parser p{text, err};
  out.count = 0;
  out.pad_ = 0;
  std::string_view rest = text;
  std::string_view rule_text[kMaxRules];
  while (true) {
    size_t comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    if (!item.empty()) {
      if (out.count == kMaxRules) {
        p.fail(item, "too many rules at '%.*s'", item);
        size_t used = std::strlen(err.message);
        std::snprintf(err.message + used, sizeof err.message - used, " (at most %u)", static_cast<unsigned>(kMaxRules));
        return false;
      }
      if (!p.parse_rule(item, out.rules[out.count])) return false;
      rule_text[out.count++] = item;
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (out.count == 0) return p.fail(text, "no rules in '%.*s'", text);
  BucketTable table;
  TableConflict conflict;
  if (!bucket_table_build(out, table, &conflict)) {
    std::string_view name = call_name(conflict.call);
    p.fail(rule_text[conflict.second_rule], "call '%.*s' is already limited by an earlier rule", name);
    size_t used = std::strlen(err.message);
    std::snprintf(err.message + used, sizeof err.message - used, " ('%.*s'; a call may be in one bucket)",
                  static_cast<int>(rule_text[conflict.first_rule].size()), rule_text[conflict.first_rule].data());
    return false;
  }
  return true;
}

bool duration_parse(std::string_view text, uint64_t& ns) noexcept {
  char s[64];
  if (text.size() >= sizeof s) return false;
  std::memcpy(s, text.data(), text.size());
  s[text.size()] = '\0';
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s) return false;
  uint64_t mult = 1;
  if (*end == '\0' || std::strcmp(end, "ns") == 0) mult = 1;
  else if (std::strcmp(end, "us") == 0) mult = 1000;
  else if (std::strcmp(end, "ms") == 0) mult = 1000000;
  else if (std::strcmp(end, "s") == 0) mult = 1000000000;
  else return false;
  if (v > 60ull * 1000000000ull / mult) return false;  // more than a minute: a typo
  ns = v * mult;
  return true;
}

size_t rule_format(const Rule& rule, char* buf, size_t cap) noexcept {
  if (cap == 0) return 0;
  size_t used = 0;
  auto put = [&](std::string_view s) {
    for (char ch : s)
      if (used + 1 < cap) buf[used++] = ch;
    buf[used] = '\0';
  };
  buf[0] = '\0';
  CallMask reads = call_mask_from_name("reads"), writes = call_mask_from_name("writes");
  CallMask opens = call_mask_from_name("opens");
  CallMask left = rule.calls;
  bool first = true;
  auto sep = [&] {
    if (!first) put("+");
    first = false;
  };
  if ((left & reads) == reads) sep(), put("reads"), left &= ~reads;
  if ((left & writes) == writes) sep(), put("writes"), left &= ~writes;
  if ((left & opens) == opens) sep(), put("opens"), left &= ~opens;
  for (size_t c = 0; c < kCallCount; ++c)
    if (left & (CallMask{1} << c)) sep(), put(call_name(static_cast<CallId>(c)));
  char num[64];
  auto with_unit = [&](uint64_t v, bool bytes) {
    static constexpr struct { uint64_t f; const char* n; } units[] = {
        {1ull << 30, "GiB"}, {1000000000, "GB"}, {1ull << 20, "MiB"}, {1000000, "MB"},
        {1ull << 10, "KiB"}, {1000, "KB"}};
    if (bytes)
      for (auto& u : units)
        if (v >= u.f && v % u.f == 0) {
          std::snprintf(num, sizeof num, "%llu%s", static_cast<unsigned long long>(v / u.f), u.n);
          return;
        }
    std::snprintf(num, sizeof num, "%llu%s", static_cast<unsigned long long>(v), bytes ? "B" : "");
  };
  // A fractional rate as a decimal of the largest unit that shows it exactly ("2.5/s",
  // "1.3KiB/s"), so that it parses back to the same rate.
  auto with_fraction = [&](uint64_t micro, bool bytes) {
    static constexpr struct { uint64_t f; const char* n; } units[] = {
        {1ull << 30, "GiB"}, {1000000000, "GB"}, {1ull << 20, "MiB"}, {1000000, "MB"},
        {1ull << 10, "KiB"}, {1000, "KB"}};
    uint64_t f = 1;
    const char* name = bytes ? "B" : "";
    if (bytes)
      for (auto& u : units)
        if (micro % u.f == 0 && micro / u.f >= kRateMicro) {
          f = u.f, name = u.n;
          break;
        }
    uint64_t v = micro / f;
    char frac[8];
    std::snprintf(frac, sizeof frac, "%06llu", static_cast<unsigned long long>(v % kRateMicro));
    size_t n = 6;
    while (n > 1 && frac[n - 1] == '0') --n;
    frac[n] = '\0';
    std::snprintf(num, sizeof num, "%llu.%s%s", static_cast<unsigned long long>(v / kRateMicro), frac, name);
  };
  put("=");
  if (rule.rate_less_micro) with_fraction(rule_rate_micro(rule), rule.unit == RateUnit::Bytes);
  else with_unit(rule.rate, rule.unit == RateUnit::Bytes);
  put(num);
  put("/s");
  if (rule.burst) {
    put(":burst=");
    with_unit(rule.burst, rule.unit == RateUnit::Bytes);
    put(num);
  }
  if (rule_ceil_above(rule)) {
    put(":ceil=");
    with_unit(rule.ceil, rule.unit == RateUnit::Bytes);
    put(num);
    put("/s");
  }
  if (rule.fd_mask != kAnyFd) {
    const char* sep_fd = ":fd=";
    for (unsigned k = 0; k < 3; ++k)
      if (rule.fd_mask & (1u << k)) put(sep_fd), put(fd_kind_name(static_cast<FdKind>(k))), sep_fd = "+";
  }
  return used;
}

}  // namespace bonsai
