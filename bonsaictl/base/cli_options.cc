// SPDX-License-Identifier: MIT
// Options tables (see cli_options.h): parsing, the help's lines, the tools' listing.
#include "base/cli_options.h"

#include <algorithm>
#include <fmt/core.h>

#include "base/diag.h"

namespace bonsai::ctl {

const CliOption kGlobalOptions[1] = {
    {"-u, --user", OptArg::Required, "NAME",
     "(root) address NAME's services (a name or uid); run also runs CMD as NAME"},
};

std::vector<std::string_view> option_spellings(const CliOption& o) {
  std::vector<std::string_view> out;
  std::string_view s = o.names;
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view one = s.substr(0, comma);
    while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
    while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
    if (!one.empty()) out.push_back(one);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

namespace {

const CliOption* find_in(CliOptions table, std::string_view name) {
  for (const CliOption& o : table)
    for (std::string_view s : option_spellings(o))
      if (s == name) return &o;
  return nullptr;
}

bool whole_number(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

[[noreturn]] void unknown(std::string_view word, CliOptions table) {
  std::vector<std::string_view> names;
  for (const CliOption& o : table)
    if (!o.hidden)
      for (std::string_view s : option_spellings(o)) names.push_back(s);
  std::string_view hint = closest_word(word, names);
  usage_error(fmt::format("unknown option '{}'{}", word, hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
}

}  // namespace

const CliOption* CliParsed::table_find(std::string_view name) const { return find_in(table_, name); }

bool CliParsed::has(std::string_view name) const {
  const CliOption* o = table_find(name);
  for (const auto& g : given_)
    if (g.first == o) return true;
  return false;
}

std::string CliParsed::value(std::string_view name, std::string_view fallback) const {
  const CliOption* o = table_find(name);
  std::string out(fallback);
  for (const auto& g : given_)
    if (g.first == o) out = g.second;
  return out;
}

std::vector<std::string> CliParsed::values(std::string_view name) const {
  const CliOption* o = table_find(name);
  std::vector<std::string> out;
  for (const auto& g : given_)
    if (g.first == o) out.push_back(g.second);
  return out;
}

CliParsed options_parse(const std::vector<std::string>& args, CliOptions table, bool positional_stop) {
  CliParsed p;
  p.table_ = table;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      p.dashdash = true;
      p.rest.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (a.size() < 2 || a[0] != '-') {  // an operand ("-" alone is one: stdin, stdout)
      if (positional_stop) {
        p.rest.assign(args.begin() + static_cast<long>(i), args.end());
        break;
      }
      p.words.push_back(a);
      continue;
    }
    size_t eq = a.rfind("--", 0) == 0 ? a.find('=') : std::string::npos;
    std::string name = a.substr(0, eq);
    const CliOption* o = find_in(table, name);
    if (!o) unknown(name, table);
    std::string v;
    switch (o->arg) {
      case OptArg::None:
        if (eq != std::string::npos) usage_error(fmt::format("option {} takes no value ('{}')", name, a));
        break;
      case OptArg::Required:
        if (eq != std::string::npos) v = a.substr(eq + 1);
        else if (i + 1 < args.size()) v = args[++i];
        else usage_error(fmt::format("option {} needs a value ({})", name, o->value));
        break;
      case OptArg::Optional:
        if (eq != std::string::npos) v = a.substr(eq + 1);
        else if (i + 1 < args.size() && whole_number(args[i + 1])) v = args[++i];
        break;
    }
    p.given_.emplace_back(o, std::move(v));
  }
  return p;
}

namespace {

std::string spelled(const CliOption& o) {
  std::string s(o.names);
  if (o.arg == OptArg::Required) s += fmt::format(" {}", o.value);
  if (o.arg == OptArg::Optional) s += fmt::format("[={}]", o.value);
  return s;
}

}  // namespace

std::string options_help(CliOptions table) {
  constexpr size_t kColumn = 20;  // where the text starts; a longer spelling puts it on the next line
  std::string out;
  for (const CliOption& o : table) {
    if (o.hidden) continue;
    std::string head = "  " + spelled(o);
    std::string_view text = o.help;
    bool first = true;
    if (head.size() + 1 > kColumn) {
      out += head + "\n";
      head.clear();
    }
    do {
      size_t nl = text.find('\n');
      std::string_view line = text.substr(0, nl);
      std::string lead = first && !head.empty() ? head : "";
      out += fmt::format("{:<{}}{}\n", lead, kColumn, line);
      first = false;
      text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    } while (!text.empty());
  }
  return out;
}

std::string options_table_text(CliOptions table) {
  std::string out;
  for (const CliOption& o : table) {
    if (o.hidden) continue;
    out += fmt::format("{}\t{}\t{}\n", o.names, o.value,
                       o.arg == OptArg::None ? "none" : o.arg == OptArg::Required ? "required" : "optional");
  }
  return out;
}

}  // namespace bonsai::ctl
