// SPDX-License-Identifier: MIT
// Unit tests of bonsaictl/config/fleet_trusted: what `load` keeps for the fleet agent
// reads back exactly (store, password file, namespace, period, expected hosts, rules,
// the segment it belongs to), and a file the agent cannot trust -- another mode, a
// damaged line, a directory of the wrong mode -- is refused, never half-used.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "abi/fleet_abi.h"
#include "config/fleet_trusted.h"
#include "config/yaml_load.h"

using namespace bonsai;
using namespace bonsai::ctl;

namespace {

struct Prefix {
  Prefix() { setenv("BONSAI_SHM_PREFIX", ("trustunit" + std::to_string(getpid()) + ".").c_str(), 1); }
  ~Prefix() {
    std::string dir = fleet_dir();
    std::string cmd = "rm -rf '" + dir + "'";
    if (std::system(cmd.c_str()) != 0) {}
    unsetenv("BONSAI_SHM_PREFIX");
  }
};

ServiceConfig web() {
  std::vector<Diag> diags;
  Config cfg = yaml_load_string("version: 1\nservices:\n  web:\n    fleet:\n      store: redis://u@127.0.0.1:6390\n"
                                "      period: 100ms\n      password_file: /etc/bonsai/redis.pass\n"
                                "      namespace: shop\n      expected_hosts: 8\n    limits:\n"
                                "      - {calls: [write], rate: 8MiB/s, fd: socket}\n      - {calls: [read], rate: 100/s}\n",
                                "f.yaml", diags);
  REQUIRE(diags.empty());
  return cfg.services.at(0);
}

ServiceConfig web_sentinel() {
  std::vector<Diag> diags;
  Config cfg = yaml_load_string("version: 1\nservices:\n  web:\n    fleet:\n"
                                "      store: redis+sentinel://u@127.0.0.1:26390,127.0.0.1:26391/main\n"
                                "      password_file: /etc/bonsai/redis.pass\n"
                                "      sentinel_password_file: /etc/bonsai/sentinel.pass\n"
                                "    limits:\n      - {calls: [write], rate: 8MiB/s}\n",
                                "f.yaml", diags);
  REQUIRE(diags.empty());
  return cfg.services.at(0);
}

}  // namespace

TEST_CASE("fleet_trusted: what load writes the agent reads back exactly", "[fleet_trusted]") {
  Prefix prefix;
  char seg_path[] = "/tmp/trustunit.segXXXXXX";
  int seg = mkstemp(seg_path);
  REQUIRE(seg >= 0);
  ServiceConfig svc = web();
  REQUIRE(fleet_trusted_write(svc, seg).empty());
  FleetTrusted t;
  std::string why;
  REQUIRE(fleet_trusted_read("web", t, why) == 1);
  CHECK(why.empty());
  CHECK(t.fleet.store == "redis://u@127.0.0.1:6390");
  CHECK(t.fleet.password_file == "/etc/bonsai/redis.pass");
  CHECK(t.fleet.fleet_namespace == "shop");
  CHECK(t.fleet.period_ms == 100);
  CHECK(t.fleet.expected_hosts == 8);
  REQUIRE(t.rules.count == svc.limits.count);
  CHECK(std::memcmp(t.rules.rules, svc.limits.rules, sizeof(Rule) * svc.limits.count) == 0);
  CHECK(fleet_trusted_matches(t, seg));
  char other_path[] = "/tmp/trustunit.otherXXXXXX";
  int other = mkstemp(other_path);
  REQUIRE(other >= 0);
  CHECK_FALSE(fleet_trusted_matches(t, other));  // another segment file: not served
  CHECK(fleet_trusted_list(why) == std::vector<std::string>{"web"});
  CHECK(fleet_trusted_read("api", t, why) == 0);  // none: not a fleet service

  // A file group or others could have changed: refused, said why.
  std::string file = fleet_dir() + "/svc.web";
  REQUIRE(chmod(file.c_str(), 0644) == 0);
  CHECK(fleet_trusted_read("web", t, why) == -1);
  CHECK(why.find("mode 0644") != std::string::npos);
  REQUIRE(chmod(file.c_str(), 0600) == 0);
  // A line the agent cannot use: the whole file refused.
  int fd = open(file.c_str(), O_WRONLY | O_APPEND);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "store http://evil:1\n", 20) == 20);
  close(fd);
  CHECK(fleet_trusted_read("web", t, why) == -1);
  CHECK(why.find("load` its file again") != std::string::npos);
  // Removed (the service lost its fleet:): none.
  fleet_trusted_remove("web");
  CHECK(fleet_trusted_read("web", t, why) == 0);
  // The directory opened to others: nothing in it is trusted.
  REQUIRE(fleet_trusted_write(svc, seg).empty());
  REQUIRE(chmod(fleet_dir().c_str(), 0777) == 0);
  CHECK(fleet_trusted_read("web", t, why) == -1);
  CHECK(why.find("squat") != std::string::npos);
  CHECK_FALSE(fleet_trusted_write(svc, seg).empty());
  close(seg), close(other);
  unlink(seg_path), unlink(other_path);
}

TEST_CASE("fleet_trusted: the Sentinels' password file is kept and bounded as the data nodes'", "[fleet_trusted]") {
  Prefix prefix;
  char seg_path[] = "/tmp/trustunit.segXXXXXX";
  int seg = mkstemp(seg_path);
  REQUIRE(seg >= 0);
  ServiceConfig svc = web_sentinel();
  REQUIRE(fleet_trusted_write(svc, seg).empty());
  FleetTrusted t;
  std::string why;
  REQUIRE(fleet_trusted_read("web", t, why) == 1);
  CHECK(t.fleet.store == "redis+sentinel://u@127.0.0.1:26390,127.0.0.1:26391/main");
  CHECK(t.fleet.password_file == "/etc/bonsai/redis.pass");
  CHECK(t.fleet.sentinel_password_file == "/etc/bonsai/sentinel.pass");
  // A line the reader would not accept from `load`: the whole file refused.
  std::string file = fleet_dir() + "/svc.web";
  for (std::string bad : {std::string("sentinel_password_file relative/path\n"),
                          "sentinel_password_file /" + std::string(kFleetPathMax, 'a') + "\n",
                          std::string("sentinel_password_file \n")}) {
    REQUIRE(fleet_trusted_write(svc, seg).empty());
    int fd = open(file.c_str(), O_WRONLY | O_APPEND);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, bad.data(), bad.size()) == static_cast<ssize_t>(bad.size()));
    close(fd);
    CHECK(fleet_trusted_read("web", t, why) == -1);
    CHECK(why.find("load` its file again") != std::string::npos);
  }
  close(seg);
  unlink(seg_path);
}
