// SPDX-License-Identifier: MIT
// bonsaictl's options tables (base/cli_options.h): the parser's forms and errors, the
// generated help, and the commands' edges that a hand parser got wrong: `help` of an
// unknown command, `set --wait MS SERVICE`, `stat --count` alone, `run -s` misspelt
// (a new service's note: t_ctl_options.sh, since run execs),
// unit errors that list every unit, a fleet grant in human units.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "abi/limit_parse.h"
#include "base/cli_options.h"
#include "cmd/commands.h"
#include "segment/shm_client.h"
#include "stat/stat_text.h"

using namespace bonsai;
using namespace bonsai::ctl;

namespace {

struct Ran {
  int rc;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs bonsaictl with stdout and stderr captured.
Ran run_ctl(std::vector<std::string> args) {
  args.insert(args.begin(), "bonsaictl");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string o = "/tmp/bonsai-cli-unit-" + std::to_string(getpid()) + ".out", e = o + ".err";
  std::fflush(stdout), std::fflush(stderr);
  int out = dup(1), err = dup(2);
  int fo = open(o.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600), fe = open(e.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  dup2(fo, 1), dup2(fe, 2);
  int rc = ctl_main(static_cast<int>(args.size()), argv.data());
  std::fflush(stdout), std::fflush(stderr);
  dup2(out, 1), dup2(err, 2);
  close(out), close(err), close(fo), close(fe);
  Ran r{rc, slurp(o), slurp(e)};
  unlink(o.c_str()), unlink(e.c_str());
  return r;
}

struct Prefix {  // a private segment namespace, cleaned up afterwards
  Prefix() { setenv("BONSAI_SHM_PREFIX", ("cliunit" + std::to_string(getpid()) + ".").c_str(), 1); }
  ~Prefix() {
    for (const auto& s : services_list()) segment_remove(s);
    unsetenv("BONSAI_SHM_PREFIX");
  }
};

constexpr CliOption kTable[] = {
    {"-n, --count", OptArg::Required, "N", "stop after N"},
    {"--json", OptArg::None, {}, "JSON"},
    {"--wait", OptArg::Optional, "MS", "wait\nsecond line"},
    {"--secret", OptArg::None, {}, {}, true},
};

std::string usage_message(const std::vector<std::string>& args, bool stop = false) {
  try {
    options_parse(args, kTable, stop);
  } catch (const CtlError& e) {
    CHECK(e.code == kExitUsage);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("cli options: every form of a value, operands and --", "[cli]") {
  CliParsed p = options_parse({"a", "--count", "3", "b", "--json"}, kTable);
  CHECK(p.has("--json"));
  CHECK(p.has("-n"));
  CHECK(p.value("-n") == "3");
  CHECK(p.words == std::vector<std::string>{"a", "b"});
  // A short option's value is the next word.
  CHECK(usage_message({"-n=4"}) == "unknown option '-n=4' (did you mean '-n'?)");
  p = options_parse({"--count=7", "-n", "8"}, kTable);
  CHECK(p.values("--count") == std::vector<std::string>{"7", "8"});
  CHECK(p.value("--count") == "8");
  p = options_parse({"a", "--json", "--", "--json", "x"}, kTable);
  CHECK(p.words == std::vector<std::string>{"a"});
  CHECK(p.rest == std::vector<std::string>{"--json", "x"});
  CHECK(p.dashdash);
  p = options_parse({"--json", "cmd", "--json"}, kTable, true);  // run's CMD keeps its own options
  CHECK(p.rest == std::vector<std::string>{"cmd", "--json"});
  CHECK(p.value("--wait", "dflt") == "dflt");
}

TEST_CASE("cli options: an optional value is =MS or a whole number after it", "[cli]") {
  CliParsed p = options_parse({"--wait", "500", "svc"}, kTable);
  CHECK(p.value("--wait") == "500");
  CHECK(p.words == std::vector<std::string>{"svc"});
  p = options_parse({"--wait", "svc", "500"}, kTable);
  CHECK(p.has("--wait"));
  CHECK(p.value("--wait").empty());
  CHECK(p.words == std::vector<std::string>{"svc", "500"});
  p = options_parse({"--wait=20"}, kTable);
  CHECK(p.value("--wait") == "20");
}

TEST_CASE("cli options: usage errors quote the word and suggest the closest option", "[cli]") {
  CHECK(usage_message({"--jsno"}) == "unknown option '--jsno' (did you mean '--json'?)");
  CHECK(usage_message({"--frobnicate"}) == "unknown option '--frobnicate'");
  CHECK(usage_message({"--secre"}) == "unknown option '--secre'");  // hidden options are never suggested
  CHECK(usage_message({"--count"}) == "option --count needs a value (N)");
  CHECK(usage_message({"--json=1"}) == "option --json takes no value ('--json=1')");
  CHECK(usage_message({"--bogus", "x"}, true).find("unknown option '--bogus'") == 0);
  CHECK(usage_message({"--secret"}).empty());
}

TEST_CASE("cli options: the help is generated from the table, hidden options left out", "[cli]") {
  std::string h = options_help(kTable);
  CHECK(h.find("  -n, --count N     stop after N\n") != std::string::npos);
  CHECK(h.find("  --wait[=MS]       wait\n                    second line\n") != std::string::npos);
  CHECK(h.find("secret") == std::string::npos);
  CHECK(options_table_text(kTable) == "-n, --count\tN\trequired\n--json\t\tnone\n--wait\tMS\toptional\n");
}

TEST_CASE("cli: every command's help shows its table; help --options lists them all", "[cli]") {
  Ran r = run_ctl({"help", "--options"});
  CHECK(r.rc == 0);
  CHECK(r.out.find("*\t-u, --user\tNAME\trequired\n") != std::string::npos);
  CHECK(r.out.find("stat\t-n, --count\tN\trequired\n") != std::string::npos);
  CHECK(r.out.find("set\t--wait\tMS\toptional\n") != std::string::npos);
  CHECK(r.out.find("exit-when-idle") == std::string::npos);  // internal
  r = run_ctl({"help", "stat"});
  CHECK(r.rc == 0);
  CHECK(r.out.find("  -w, --watch SECS  print again every SECS") != std::string::npos);
  CHECK(r.out.find("exit status:") != std::string::npos);
  CHECK(run_ctl({"stat", "--help"}).out == r.out);
}

TEST_CASE("cli: help of an unknown command exits 2 with a did-you-mean", "[cli]") {
  Ran r = run_ctl({"help", "staat"});
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("bonsaictl help: unknown command 'staat' (did you mean 'stat'?)") == 0);
  CHECK(run_ctl({"help"}).rc == 0);
  CHECK(run_ctl({"help", "set"}).rc == 0);
}

TEST_CASE("cli: an unknown option of a command exits 2 with a did-you-mean", "[cli]") {
  Ran r = run_ctl({"stat", "--jsn"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("bonsaictl stat: unknown option '--jsn' (did you mean '--json'?)") == 0);
  r = run_ctl({"run", "--servce", "x", "--", "true"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("(did you mean '--service'?)") != std::string::npos);
}

TEST_CASE("cli: set --wait MS SERVICE takes MS as the wait", "[cli]") {
  Prefix prefix;
  std::string path = "/tmp/bonsai-cli-unit-" + std::to_string(getpid()) + ".yaml";
  std::ofstream(path) << "version: 1\nservices:\n  web:\n    limits:\n      - {calls: [read], rate: 1MiB/s}\n";
  REQUIRE(run_ctl({"load", path}).rc == 0);
  unlink(path.c_str());
  Ran r = run_ctl({"set", "--wait", "500", "web", "read=2MiB/s"});
  CHECK(r.rc == 0);
  CHECK(r.out.find("web: limits #") == 0);
  CHECK(r.out.find("web: applied by") != std::string::npos);
  CHECK(r.err.find("'500'") == std::string::npos);
  r = run_ctl({"set", "--wait=abc", "web", "read=2MiB/s"});
  CHECK(r.rc == 2);
  r = run_ctl({"set", "web", "--wait", "read=3MiB/s"});  // --wait alone: 1000 ms
  CHECK(r.rc == 0);
}

TEST_CASE("cli: stat --count without --watch is refused", "[cli]") {
  Ran r = run_ctl({"stat", "--count", "2"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("--count N counts the intervals of --watch SECS") != std::string::npos);
  CHECK(run_ctl({"stat", "--count", "x", "--watch", "1"}).rc == 2);
  CHECK(run_ctl({"stat", "-n", "0", "-w", "1"}).rc == 2);
}

TEST_CASE("cli: run -s names a service the file lacks: did you mean", "[cli]") {
  Prefix prefix;
  std::string path = "/tmp/bonsai-cli-unit-" + std::to_string(getpid()) + ".yaml";
  std::ofstream(path) << "version: 1\nservices:\n  video:\n    limits:\n      - {calls: [read], rate: 1MiB/s}\n";
  Ran r = run_ctl({"run", "-c", path, "-s", "vidoe", "--", "true"});
  unlink(path.c_str());
  CHECK(r.rc == 2);
  CHECK(r.err.find("has no service 'vidoe' (did you mean 'video'?)") != std::string::npos);
}

TEST_CASE("cli: a unit error lists every unit the grammar accepts", "[cli]") {
  LimitSet set{};
  ParseError err;
  REQUIRE_FALSE(limit_parse("read=1Mb/s", set, err));
  std::string msg = err.message;
  for (const char* u : {"B", "KB", "kB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"}) {
    INFO(u);
    std::string n = std::string(u).front() == 'T' ? "0.5" : "2";  // 1TiB/s and 2TB/s are above the largest rate
    CHECK(limit_parse("read=" + n + u + "/s", set, err));
    std::string word = std::string(" ") + u;
    CHECK((msg.find(word + " ") != std::string::npos || msg.find(word + ",") != std::string::npos));
  }
  CHECK_FALSE(limit_parse("read=1PiB/s", set, err));  // and no other
}

TEST_CASE("cli: ls shows a byte rate no unit divides in human units", "[cli]") {
  CHECK(rule_text_human("writes=209712B/s") == "writes=~204.8KiB/s");
  CHECK(rule_text_human("writes=209712B/s:ceil=3145728B/s") == "writes=~204.8KiB/s:ceil=~3.0MiB/s");
  CHECK(rule_text_human("read=10MiB/s:burst=1000B") == "read=10MiB/s:burst=1000B");
  CHECK(rule_text_human("read=1000B/s") == "read=1000B/s");
  CHECK(rule_text_human("openat=200/s") == "openat=200/s");
}
