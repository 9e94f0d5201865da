// SPDX-License-Identifier: MIT
// YAML configuration loader (see yaml_load.h): schema checks with the position of
// every value, limits built with the same grammar and checks as BONSAI_LIMITS.
#include "config/yaml_load.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "abi/limit_parse.h"
#include "shm/shm_name.h"

namespace bonsai::ctl {
namespace {

// A first pass over the parser's events, before any tree is built: what yaml-cpp
// accepts silently but a configuration must not have. A key given twice in one
// mapping (yaml-cpp keeps the last one), a key that is not a plain name, a second
// document, and more than kMaxConfigNodes nodes once aliases are expanded.
// Linear: keys of a mapping go into a hash map with their marks.
class StrictScan : public YAML::EventHandler {
 public:
  StrictScan(const std::string& file, std::vector<Diag>& diags) : file_(file), diags_(diags) {}
  struct TooBig {};  // thrown to stop the parser

  void OnDocumentStart(const YAML::Mark& m) override {
    if (++docs_ == 2)
      error(m, "a second YAML document (after '---' or '...'): a configuration file holds one document");
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t a) override { leaf(m, a, ""); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t a, const std::string& v) override {
    leaf(m, a, v);
  }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t a) override {
    slot(m, "an alias (*name)", nullptr);
    auto it = anchor_nodes_.find(a);
    count(m, it == anchor_nodes_.end() ? 1 : it->second);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    begin(m, a, false);
  }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    begin(m, a, true);
  }
  void OnSequenceEnd() override { end(); }
  void OnMapEnd() override { end(); }

  int docs() const { return docs_; }

 private:
  struct Frame {
    bool map;
    bool want_key = true;
    YAML::anchor_t anchor = YAML::NullAnchor;
    size_t nodes = 1;  // of this subtree, aliases expanded (saturates past the bound)
    std::unordered_map<std::string, YAML::Mark> keys;
  };

  void error(const YAML::Mark& m, std::string msg) { diags_.push_back(diag_at(file_, m, std::move(msg))); }

  static size_t add(size_t a, size_t b) { return a + b > kMaxConfigNodes + 1 ? kMaxConfigNodes + 1 : a + b; }

  // Adds `n` expanded nodes to the current subtree and to the file's total.
  void count(const YAML::Mark& m, size_t n) {
    if (!stack_.empty()) stack_.back().nodes = add(stack_.back().nodes, n);
    total_ = add(total_, n);
    if (total_ > kMaxConfigNodes) {
      error(m, fmt::format("more than {} nodes once aliases are expanded: not a configuration", kMaxConfigNodes));
      throw TooBig{};
    }
  }

  // A node starts at `m`: if it is a key of the enclosing mapping, check it. `scalar`
  // is its text, or null for something that is not a plain name (`what`).
  void slot(const YAML::Mark& m, const char* what, const std::string* scalar) {
    if (stack_.empty() || !stack_.back().map) return;
    Frame& f = stack_.back();
    bool is_key = f.want_key;
    f.want_key = !f.want_key;
    if (!is_key) return;
    if (!scalar) return error(m, fmt::format("a key must be a plain name, not {}", what));
    auto [it, fresh] = f.keys.emplace(*scalar, m);
    if (!fresh)
      error(m, fmt::format("duplicate key '{}' (first at line {}, column {}): a key may appear once in a mapping",
                           *scalar, it->second.line + 1, it->second.column + 1));
  }

  void leaf(const YAML::Mark& m, YAML::anchor_t a, const std::string& v) {
    slot(m, "", &v);
    if (a != YAML::NullAnchor) anchor_nodes_[a] = 1;
    count(m, 1);
  }

  void begin(const YAML::Mark& m, YAML::anchor_t a, bool map) {
    slot(m, map ? "a mapping" : "a list", nullptr);
    total_ = add(total_, 1);
    stack_.push_back(Frame{map, true, a, 1, {}});
  }

  void end() {
    if (stack_.empty()) return;
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    if (f.anchor != YAML::NullAnchor) anchor_nodes_[f.anchor] = f.nodes;
    if (!stack_.empty()) stack_.back().nodes = add(stack_.back().nodes, f.nodes);
  }

  const std::string& file_;
  std::vector<Diag>& diags_;
  int docs_ = 0;
  size_t total_ = 0;
  std::vector<Frame> stack_;
  std::unordered_map<YAML::anchor_t, size_t> anchor_nodes_;
};

struct Loader {
  const std::string& file;
  std::vector<Diag>& diags;
  std::unordered_set<std::string> service_names{};

  void error(const YAML::Mark& m, std::string msg) {
    diags.push_back(diag_at(file, m, std::move(msg)));  // yaml_load_string keeps the first kMaxConfigDiags
  }

  void unknown_key(const YAML::Node& key, std::string_view where, const std::vector<std::string_view>& keys) {
    std::string k = key.Scalar();
    std::string_view hint = k == "on" ? std::string_view("fd") : closest_word(k, keys);
    error(key.Mark(), hint.empty() ? fmt::format("unknown key '{}' in {}", k, where)
                                   : fmt::format("unknown key '{}' in {} (did you mean '{}'?)", k, where, hint));
  }

  // The rules of one service so far, for the "one call in two buckets" check: the
  // limit module's table (abi/limits_abi.h bucket_table_conflict) and, per rule, where
  // each of its calls was named.
  struct Claims {
    BucketTable table;
    std::vector<std::vector<std::pair<CallMask, YAML::Mark>>> named;  // per rule
    Claims() { bucket_table_clear(table); }
    YAML::Mark mark_of(uint8_t rule, CallId c) const {
      for (const auto& [mask, mark] : named[rule])
        if (mask & (CallMask{1} << static_cast<size_t>(c))) return mark;
      return YAML::Mark::null_mark();
    }
  };

  // One rule, checked against the service's `claims` so far.
  void rule(const YAML::Node& node, ServiceConfig& svc, Claims& claims) {
    if (!node.IsMap()) return error(node.Mark(), "a limit must be a mapping (calls, rate, burst, fd)");
    static const std::vector<std::string_view> kKeys = {"calls", "rate", "ceil", "burst", "fd"};
    Rule r{};
    r.fd_mask = kAnyFd;
    YAML::Node calls, rate, burst, ceil;  // a default Node is a null node: track presence apart
    bool has_calls = false, has_rate = false, has_burst = false, has_ceil = false;
    for (const auto& kv : node) {
      std::string key = kv.first.Scalar();
      if (key == "calls") calls.reset(kv.second), has_calls = true;
      else if (key == "rate") rate.reset(kv.second), has_rate = true;
      else if (key == "burst") burst.reset(kv.second), has_burst = true;
      else if (key == "ceil") ceil.reset(kv.second), has_ceil = true;
      else if (key == "fd") fd(kv.second, r);
      else unknown_key(kv.first, "a limit", kKeys);
    }
    bool ok = true;
    std::vector<std::pair<CallMask, YAML::Mark>> named;
    if (!has_calls) ok = false, error(node.Mark(), "limit has no 'calls'");
    else call_list(calls, r, named, ok);
    if (!has_rate) ok = false, error(node.Mark(), "limit has no 'rate'");
    else rate_of(rate, r, named, ok);
    if (has_burst) {
      std::string b = burst.IsScalar() ? burst.Scalar() : "";
      if (!size_parse(b, r.burst) || r.burst == 0)
        ok = false, error(burst.Mark(), fmt::format("bad burst '{}' (a size like 256KiB, or a count, > 0)", b));
    }
    if (has_ceil && ok) ceil_of(ceil, r, ok);
    if (!ok) return;
    if (svc.limits.count == kMaxRules)
      return error(node.Mark(), fmt::format("service '{}' has more than {} limits", svc.name, kMaxRules));
    auto index = static_cast<uint8_t>(svc.limits.count);
    for (const auto& [mask, mark] : named)
      for (size_t c = 0; c < kCallCount; ++c) {
        if (!(mask & (CallMask{1} << c))) continue;
        Rule one = r;
        one.calls = CallMask{1} << c;
        TableConflict conflict;
        if (bucket_table_conflict(claims.table, one, index, &conflict)) {
          ok = false;
          error(mark, fmt::format("call '{}' is already limited at line {} of service '{}' (each call may be in "
                                  "one bucket)",
                                  call_name(conflict.call), claims.mark_of(conflict.first_rule, conflict.call).line + 1,
                                  svc.name));
        }
      }
    if (!ok) return;
    bucket_table_claim(claims.table, r, index);
    claims.named.push_back(std::move(named));
    svc.limits.rules[svc.limits.count++] = r;
    svc.rule_marks.push_back(node.Mark());
  }

  void call_list(const YAML::Node& calls, Rule& r, std::vector<std::pair<CallMask, YAML::Mark>>& named, bool& ok) {
    std::vector<YAML::Node> items;
    if (calls.IsScalar()) items.push_back(calls);
    else if (calls.IsSequence()) for (const auto& c : calls) items.push_back(c);
    if (items.empty()) return ok = false, error(calls.Mark(), "'calls' must be a non-empty list of call names");
    for (const auto& item : items) {
      std::string name = item.IsScalar() ? item.Scalar() : "";
      CallMask m = call_mask_from_name(name);
      if (!m) {
        ok = false;
        std::string_view hint = call_name_suggest(name);
        error(item.Mark(), hint.empty() ? fmt::format("unknown call '{}'", name)
                                        : fmt::format("unknown call '{}' (did you mean '{}'?)", name, hint));
        continue;
      }
      if (r.calls & m) {
        ok = false;
        error(item.Mark(), fmt::format("call '{}' named twice in one limit", name));
        continue;
      }
      r.calls |= m;
      named.emplace_back(m, item.Mark());
    }
  }

  void rate_of(const YAML::Node& node, Rule& r, const std::vector<std::pair<CallMask, YAML::Mark>>& named, bool& ok) {
    std::string text = node.IsScalar() ? node.Scalar() : "";
    if (!text.empty() && text[0] == '-') return ok = false, error(node.Mark(), fmt::format("rate must be > 0 (got '{}')", text));
    ParseError err;
    if (!rate_parse(text, r.rate, r.unit, err)) return ok = false, error(node.Mark(), err.message);
    if (r.unit != RateUnit::Bytes) return;
    for (const auto& [mask, mark] : named)
      for (size_t c = 0; c < kCallCount; ++c)
        if ((mask & (CallMask{1} << c)) && !call_is_data(static_cast<CallId>(c))) {
          ok = false;
          error(node.Mark(), fmt::format("'{}' moves no data: give it a call rate like 200/s (got '{}')",
                                         call_name(static_cast<CallId>(c)), text));
          return;
        }
  }

  // Shares: the most a rule may reach borrowing (>= its rate, in its unit).
  void ceil_of(const YAML::Node& node, Rule& r, bool& ok) {
    if (capacity_) return ok = false, error(node.Mark(), "a capacity rule has no 'ceil' (it is the host's whole rate)");
    std::string text = node.IsScalar() ? node.Scalar() : "";
    ParseError err;
    RateUnit unit;
    if (!rate_parse(text, r.ceil, unit, err)) return ok = false, error(node.Mark(), fmt::format("ceil: {}", err.message));
    if (unit != r.unit) return ok = false, error(node.Mark(), fmt::format("ceil '{}' is not in the rate's unit", text));
    if (r.ceil < r.rate)
      return ok = false, error(node.Mark(), fmt::format("ceil '{}' is below the rate (a ceiling is at least the "
                                                        "guaranteed rate)", text));
  }

  // `host: capacity:` (shares): the capacity rules, checked as a service's limits are.
  void host(const YAML::Node& node, Config& cfg) {
    cfg.has_host = true;
    if (!node.IsMap()) return error(node.Mark(), "'host' must be a mapping with 'capacity:'");
    static const std::vector<std::string_view> kKeys = {"capacity"};
    for (const auto& kv : node) {
      if (kv.first.Scalar() != "capacity") {
        unknown_key(kv.first, "'host'", kKeys);
        continue;
      }
      if (!kv.second.IsSequence()) {
        error(kv.second.Mark(), "'capacity' must be a list of rules (calls, rate, burst, fd)");
        continue;
      }
      ServiceConfig pseudo;
      pseudo.name = "host capacity";
      Claims claims;
      capacity_ = true;
      for (const auto& item : kv.second) rule(item, pseudo, claims);
      capacity_ = false;
      cfg.capacity = pseudo.limits;
      cfg.capacity_marks = pseudo.rule_marks;
    }
  }
  bool capacity_ = false;  // parsing `host: capacity:` rules

  void fd(const YAML::Node& v, Rule& r) {
    std::string k = v.IsScalar() ? v.Scalar() : "";
    if (k == "socket") r.fd_mask = 1u << static_cast<unsigned>(FdKind::Socket);
    else if (k == "file") r.fd_mask = 1u << static_cast<unsigned>(FdKind::File);
    else if (k == "pipe") r.fd_mask = 1u << static_cast<unsigned>(FdKind::Pipe);
    else error(v.Mark(), fmt::format("bad fd kind '{}' (socket, file or pipe)", k));
  }

  void service(const YAML::Node& key, const YAML::Node& node, Config& cfg) {
    ServiceConfig svc;
    svc.name = key.Scalar();
    svc.mark = key.Mark();
    if (!shm_service_name_valid(svc.name))
      error(key.Mark(), fmt::format("bad service name '{}' (1-63 of A-Z a-z 0-9 _ . -, not starting with . or -)", svc.name));
    if (!service_names.insert(svc.name).second) {  // a hash set: 200k services stay linear
      error(key.Mark(), fmt::format("service '{}' defined twice", svc.name));
      return;
    }
    if (node.IsNull()) return cfg.services.push_back(std::move(svc));
    if (!node.IsMap()) return error(node.Mark(), fmt::format("service '{}' must be a mapping", svc.name));
    static const std::vector<std::string_view> kKeys = {"scope", "limits", "compression", "fleet", "io_uring", "user",
                                                                 "strict"};
    Claims claims;
    YAML::Mark scope_mark;
    bool scope_given = false;
    for (const auto& kv : node) {
      std::string k = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      if (k == "scope") {
        std::string s = v.IsScalar() ? v.Scalar() : "";
        if (s == "process") svc.scope = ShmScope::Process;
        else if (s == "service") svc.scope = ShmScope::Service;
        else error(v.Mark(), fmt::format("bad scope '{}' (process or service)", s));
        scope_mark = v.Mark(), scope_given = true;
      } else if (k == "limits") {
        if (v.IsNull()) continue;
        if (!v.IsSequence()) {
          error(v.Mark(), "'limits' must be a list");
          continue;
        }
        for (const auto& item : v) rule(item, svc, claims);
      } else if (k == "compression") {
        compression_load(v, file, svc.compression, diags);
      } else if (k == "fleet") {
        fleet_load(v, file, svc.fleet, diags);
      } else if (k == "io_uring") {
        std::string s = v.IsScalar() ? v.Scalar() : "";
        if (s == "deny" || s == "allow") svc.io_uring = s;
        else error(v.Mark(), fmt::format("bad io_uring '{}' (deny or allow)", s));
      } else if (k == "strict") {
        std::string s = v.IsScalar() ? v.Scalar() : "";
        if (s == "true") svc.strict = true;
        else if (s == "false") svc.strict = false;
        else error(v.Mark(), fmt::format("bad strict '{}' (true or false)", s));
      } else if (k == "user") {  // a name checked here; whether it exists, where it is loaded
        std::string s = v.IsScalar() ? v.Scalar() : "";
        bool ok = !s.empty() && s.size() <= 32 && s.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                                                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-$") ==
                                                      std::string::npos && s[0] != '-';
        if (ok) svc.user = s, svc.user_mark = v.Mark();
        else error(v.Mark(), fmt::format("bad user '{}' (a user name or uid)", s));
      } else {
        unknown_key(kv.first, fmt::format("service '{}'", svc.name), kKeys);
      }
    }
    // A fleet cap is one host's share of the cap, for all its processes together.
    if (svc.fleet.present) {
      if (scope_given && svc.scope == ShmScope::Process)
        error(scope_mark, "a fleet service's caps hold all its processes together: scope must be service");
      svc.scope = ShmScope::Service;
    }
    cfg.services.push_back(std::move(svc));
  }

  void top(const YAML::Node& root, Config& cfg) {
    if (!root.IsDefined() || root.IsNull())
      return error(YAML::Mark{}, "the file is empty: it must be a mapping with 'version: 1' and 'services:'");
    if (!root.IsMap()) return error(root.Mark(), "the file must be a mapping with 'version: 1' and 'services:'");
    static const std::vector<std::string_view> kKeys = {"version", "services", "host"};
    bool version = false;
    for (const auto& kv : root) {
      std::string k = kv.first.Scalar();
      if (k == "version") {
        version = true;
        if (!kv.second.IsScalar() || kv.second.Scalar() != "1")
          error(kv.second.Mark(), fmt::format("unsupported version '{}' (this bonsaictl reads version 1)",
                                              kv.second.IsScalar() ? kv.second.Scalar() : ""));
      } else if (k == "services") {
        if (!kv.second.IsMap()) {
          error(kv.second.Mark(), "'services' must be a mapping of service names");
          continue;
        }
        cfg.services.reserve(cfg.services.size() + kv.second.size());  // a ServiceConfig is ~2 KiB: no regrowth
        service_names.reserve(cfg.services.capacity());
        for (const auto& s : kv.second) service(s.first, s.second, cfg);
      } else if (k == "host") {
        host(kv.second, cfg);
      } else {
        unknown_key(kv.first, "the top level", kKeys);
      }
    }
    if (!version) error(root.Mark(), "missing 'version: 1'");
    shares_check(cfg, diags);
  }
};

}  // namespace

Diag diag_at(const std::string& file, const YAML::Mark& mark, std::string message) {
  if (mark.is_null()) return Diag{file, 0, 0, std::move(message)};
  return Diag{file, mark.line + 1, mark.column + 1, std::move(message)};
}

const ServiceConfig* Config::find(std::string_view name) const {
  for (const auto& s : services)
    if (s.name == name) return &s;
  return nullptr;
}

Config yaml_load_string(const std::string& text, const std::string& file, std::vector<Diag>& diags) {
  Config cfg;
  cfg.file = file;
  size_t first = diags.size();
  auto finish = [&] {  // at most kMaxConfigDiags of this file
    if (diags.size() - first > kMaxConfigDiags) {
      size_t more = diags.size() - first - kMaxConfigDiags;
      diags.resize(first + kMaxConfigDiags);
      diags.push_back(Diag{file, 0, 0, fmt::format("{} more error{} not shown", more, more == 1 ? "" : "s")});
    }
    return cfg;
  };
  if (text.size() > kMaxConfigBytes) {
    diags.push_back(Diag{file, 0, 0, fmt::format("more than {} bytes: not a configuration", kMaxConfigBytes)});
    return cfg;
  }
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    StrictScan scan(file, diags);
    while (scan.docs() < 2 && parser.HandleNextDocument(scan)) {
    }
  } catch (const StrictScan::TooBig&) {
  } catch (const YAML::Exception& e) {
    diags.push_back(diag_at(file, e.mark, e.msg));
  }
  if (diags.size() != first) return finish();
  try {
    YAML::Node root = YAML::Load(text);
    Loader{file, diags}.top(root, cfg);
  } catch (const YAML::Exception& e) {  // a conversion the schema checks missed
    diags.push_back(diag_at(file, e.mark.is_null() ? YAML::Mark{} : e.mark, e.msg));
  }
  return finish();
}

Config yaml_load_file(const std::string& path, std::vector<Diag>& diags) {
  Config cfg{path, {}};
  auto fail = [&](std::string why) {
    diags.push_back(Diag{path, 0, 0, std::move(why)});
    return cfg;
  };
  // O_NONBLOCK: opening a FIFO that has no writer must not hang; reads block again
  // below (a pipe's writer is the operator's, e.g. `check <(generate)`).
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return fail(fmt::format("cannot read the file ({})", std::strerror(errno)));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    return fail("cannot read the file (a directory)");
  }
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > kMaxConfigBytes) {
    ::close(fd);
    return fail(fmt::format("the file has {} bytes, more than the {} a configuration may have",
                            static_cast<uint64_t>(st.st_size), kMaxConfigBytes));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::string text(kMaxConfigBytes + 1, '\0');
  size_t used = 0;
  while (used < text.size()) {
    ssize_t n = ::read(fd, text.data() + used, text.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      return fail(fmt::format("cannot read the file ({})", std::strerror(e)));
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  ::close(fd);
  if (used > kMaxConfigBytes)
    return fail(fmt::format("more than {} bytes: not a configuration (a device or an endless stream?)", kMaxConfigBytes));
  text.resize(used);
  return yaml_load_string(text, path, diags);
}

}  // namespace bonsai::ctl
