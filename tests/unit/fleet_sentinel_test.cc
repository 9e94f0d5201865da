// SPDX-License-Identifier: MIT
// Unit tests of the Sentinel store (bonsaictl/config/fleet_store, fleet/fleet_sentinel,
// stat/fleet_status): the redis+sentinel:// form and its errors, sentinel_password_file
// checked at its line and column, and the Sentinel client against a fake Sentinel on
// 127.0.0.1 that answers what a hostile one could (bad addresses, huge strings, wrong
// shapes, a flooded subscription): refused, never connected to, never a crash.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <atomic>
#include <cstring>
#include <netinet/in.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "abi/fleet_abi.h"
#include "config/fleet_store.h"
#include "config/yaml_load.h"
#include "fleet/fleet_publish.h"
#include "fleet/fleet_sentinel.h"
#include "stat/fleet_status.h"
#include "sys/clock.h"

using namespace bonsai;
using namespace bonsai::ctl;

namespace {

// A fake Sentinel: accepts connections on a free 127.0.0.1 port for at most `secs`,
// and answers every request it reads with the next of `replies` (the last one again
// when they run out); `extra`, when not empty, is sent once after the first answer.
class FakeSentinel {
 public:
  FakeSentinel(std::vector<std::string> replies, std::string extra = {}) : replies_(std::move(replies)), extra_(std::move(extra)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    REQUIRE(listen(fd_, 8) == 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeSentinel() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }
  int accepted() const { return accepted_; }

 private:
  void serve() {
    uint64_t end = mono_ns() + 5'000'000'000ull;
    size_t next = 0;
    while (!stop_ && mono_ns() < end) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      accepted_++;
      bool extra_sent = false;
      while (!stop_ && mono_ns() < end) {
        pollfd q{c, POLLIN, 0};
        if (poll(&q, 1, 20) <= 0) continue;
        char buf[4096];
        if (read(c, buf, sizeof buf) <= 0) break;
        const std::string& r = replies_[next < replies_.size() ? next++ : replies_.size() - 1];
        if (write(c, r.data(), r.size()) < 0) break;
        if (!extra_.empty() && !extra_sent) {
          extra_sent = true;
          for (size_t off = 0; off < extra_.size();) {
            ssize_t n = write(c, extra_.data() + off, extra_.size() - off);
            if (n <= 0) break;
            off += static_cast<size_t>(n);
          }
        }
      }
      close(c);
    }
  }
  std::vector<std::string> replies_;
  std::string extra_;
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

std::string bulk(const std::string& s) { return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n"; }
std::string addr_reply(const std::string& host, const std::string& port) { return "*2\r\n" + bulk(host) + bulk(port); }

FleetStore store_of(const std::string& url) {
  FleetStore s;
  REQUIRE(fleet_store_parse(url, s).empty());
  return s;
}

std::string ask(const std::string& reply) {
  FakeSentinel f({reply});
  SentinelClient c;
  FleetHostPort out;
  return c.primary(store_of("redis+sentinel://127.0.0.1:" + std::to_string(f.port()) + "/m"), "", 500'000'000, out);
}

}  // namespace

TEST_CASE("redis+sentinel:// is parsed and checked", "[fleet][sentinel]") {
  FleetStore s;
  REQUIRE(fleet_store_parse("redis+sentinel://bonsai@10.0.0.1:26379,sentinel-b:26380,[::1]:26381/shop.main", s).empty());
  CHECK(s.sentinel());
  CHECK(s.user == "bonsai");
  CHECK(s.master_name == "shop.main");
  REQUIRE(s.sentinels.size() == 3);
  CHECK(fleet_host_port_text(s.sentinels[0]) == "10.0.0.1:26379");
  CHECK(fleet_host_port_text(s.sentinels[1]) == "sentinel-b:26380");
  CHECK(fleet_host_port_text(s.sentinels[2]) == "[::1]:26381");
  CHECK(s.host.empty());
  CHECK(fleet_store_parse("redis+sentinel://h:26379", s).find("no /MASTER_NAME") != std::string::npos);
  CHECK(fleet_store_parse("redis+sentinel://h:26379/", s).find("bad master name") != std::string::npos);
  CHECK(fleet_store_parse("redis+sentinel://h:26379/a/b", s).find("bad master name") != std::string::npos);
  CHECK(fleet_store_parse("redis+sentinel://h:26379,/m", s).find("Sentinel ''") != std::string::npos);
  CHECK(fleet_store_parse("redis+sentinel://h:0/m", s).find("bad port") != std::string::npos);
  CHECK(fleet_store_parse("redis+sentinel://h/m", s).find("no port") != std::string::npos);
  CHECK(fleet_store_parse("redis+sentinel://u:pw@h:1/m", s).find("password_file") != std::string::npos);
  std::string many = "redis+sentinel://";
  for (int i = 0; i < 17; ++i) many += (i ? "," : "") + std::string("h:") + std::to_string(i + 1);
  CHECK(fleet_store_parse(many + "/m", s).find("more than 16") != std::string::npos);
  // The plain forms are as they were.
  REQUIRE(fleet_store_parse("redis://u@127.0.0.1:6379", s).empty());
  CHECK((!s.sentinel() && s.host == "127.0.0.1" && s.port == 6379 && s.user == "u"));
  CHECK(fleet_store_parse("redis://127.0.0.1:99999", s) == "bad store 'redis://127.0.0.1:99999': bad port '99999' (1 to 65535)");
}

TEST_CASE("fleet: sentinel_password_file is checked at its line and column", "[fleet][sentinel]") {
  std::vector<Diag> diags;
  Config c = yaml_load_string(
      "version: 1\nservices:\n  web:\n    fleet:\n      store: redis+sentinel://bonsai@10.0.0.1:26379,10.0.0.2:26379/main\n"
      "      password_file: /etc/bonsai/redis.pass\n      sentinel_password_file: /etc/bonsai/sentinel.pass\n"
      "    limits: [{calls: [write], rate: 8MiB/s}]\n",
      "services.yaml", diags);
  REQUIRE(diags.empty());
  CHECK(c.services[0].fleet.sentinel_password_file == "/etc/bonsai/sentinel.pass");
  diags.clear();
  yaml_load_string("version: 1\nservices:\n  web:\n    fleet:\n      store: redis://10.0.0.1:6379\n"
                   "      sentinel_password_file: /etc/bonsai/sentinel.pass\n    limits: [{calls: [write], rate: 8MiB/s}]\n",
                   "services.yaml", diags);
  REQUIRE(diags.size() == 1);
  CHECK(diag_format(diags[0]).rfind("services.yaml:6:31: sentinel_password_file needs a store: redis+sentinel://", 0) == 0);
  diags.clear();
  yaml_load_string("version: 1\nservices:\n  web:\n    fleet:\n      store: redis+sentinel://10.0.0.1:26379/main\n"
                   "      password_file: /" + std::string(80, 'a') + "\n      sentinel_password_file: /" +
                       std::string(60, 'b') + "\n    limits: [{calls: [write], rate: 8MiB/s}]\n",
                   "services.yaml", diags);
  CHECK(diags.empty());  // each path bounded alone: the trusted file has a line for each
  diags.clear();
  yaml_load_string("version: 1\nservices:\n  web:\n    fleet:\n      store: redis+sentinel://10.0.0.1:26379/main\n"
                   "      sentinel_password_file: etc/sentinel.pass\n    limits: [{calls: [write], rate: 8MiB/s}]\n",
                   "services.yaml", diags);
  REQUIRE(diags.size() == 1);
  CHECK(diag_format(diags[0]).rfind("services.yaml:6:31: bad sentinel_password_file 'etc/sentinel.pass'", 0) == 0);
}

TEST_CASE("a Sentinel's answer is untrusted", "[fleet][sentinel]") {
  CHECK(ask(addr_reply("10.1.2.3", "6380")).empty());
  CHECK(ask(addr_reply("bad host!", "6379")).find("bad character in the host") != std::string::npos);
  CHECK(ask(addr_reply("10.1.2.3", "99999")).find("bad port") != std::string::npos);
  CHECK(ask(addr_reply("10.1.2.3", "-1")).find("bad port") != std::string::npos);
  CHECK(ask(addr_reply(std::string(100'000, 'a'), "6379")).find("unexpected reply") != std::string::npos);
  CHECK(ask("*3\r\n" + bulk("a") + bulk("1") + bulk("x")).find("unexpected reply") != std::string::npos);
  CHECK(ask(":12\r\n").find("unexpected reply") != std::string::npos);
  CHECK(ask("$-1\r\n").find("does not know 'm'") != std::string::npos);
  CHECK(ask("-ERR nope\r\n").find("ERR nope") != std::string::npos);
  // Each Sentinel in turn: a closed port, then one that answers.
  FakeSentinel good({addr_reply("::1", "6381")});
  FakeSentinel bad({addr_reply("10.0.0.1", "0")});
  int closed = 0;
  {
    FakeSentinel gone({"+OK\r\n"});
    closed = gone.port();
  }
  SentinelClient c;
  FleetHostPort out;
  FleetStore s = store_of("redis+sentinel://127.0.0.1:" + std::to_string(closed) + ",127.0.0.1:" + std::to_string(bad.port()) +
                          ",127.0.0.1:" + std::to_string(good.port()) + "/m");
  REQUIRE(c.primary(s, "", 500'000'000, out).empty());
  CHECK(fleet_host_port_text(out) == "[::1]:6381");
  CHECK(c.answered_by() == "127.0.0.1:" + std::to_string(good.port()));
}

TEST_CASE("+switch-master on the subscription, bounded", "[fleet][sentinel]") {
  auto msg = [](const std::string& body) { return "*3\r\n" + bulk("message") + bulk("+switch-master") + bulk(body); };
  std::string confirm = "*3\r\n" + bulk("subscribe") + bulk("+switch-master") + ":1\r\n";
  auto poll_for = [](SentinelClient& c, const FleetStore& s, bool want) {
    for (int i = 0; i < 100; ++i) {
      if (c.switched(s, "", 300'000'000) == want && want) return true;
      usleep(10'000);
    }
    return false;
  };
  {  // another master's switch is not ours; ours is
    FakeSentinel f({confirm}, msg("other 10.0.0.1 1 10.0.0.2 2") + msg("m 10.0.0.1 6379 10.0.0.2 6379"));
    FleetStore s = store_of("redis+sentinel://127.0.0.1:" + std::to_string(f.port()) + "/m");
    SentinelClient c;
    CHECK(poll_for(c, s, true));
  }
  {  // only another master's
    FakeSentinel f({confirm}, msg("other 10.0.0.1 1 10.0.0.2 2"));
    FleetStore s = store_of("redis+sentinel://127.0.0.1:" + std::to_string(f.port()) + "/m");
    SentinelClient c;
    CHECK_FALSE(poll_for(c, s, true));
  }
  {  // a flood of one endless string: the subscription is dropped, nothing switched
    FakeSentinel f({confirm}, "$100000000\r\n" + std::string(1 << 20, 'x'));
    FleetStore s = store_of("redis+sentinel://127.0.0.1:" + std::to_string(f.port()) + "/m");
    SentinelClient c;
    CHECK_FALSE(poll_for(c, s, true));
  }
}

TEST_CASE("the agent's status file lives in its lock directory", "[fleet][sentinel]") {
  CHECK(fleet_status_dir() == fleet_lock_dir());
}

TEST_CASE("sentinel_password_file: refused before any Sentinel is asked unless it is the user's alone",
          "[fleet][sentinel]") {
  char dir[] = "/tmp/sentinelpwXXXXXX";
  REQUIRE(mkdtemp(dir));
  std::string pw = std::string(dir) + "/sentinel.pass", link = std::string(dir) + "/link.pass";
  int fd = open(pw.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "s3cret\n", 7) == 7);
  close(fd);
  REQUIRE(symlink(pw.c_str(), link.c_str()) == 0);
  auto asked = [](const std::string& file, std::string& why) {
    FakeSentinel f({"+OK\r\n", addr_reply("10.1.2.3", "6380")});
    SentinelClient c;
    FleetHostPort out;
    why = c.primary(store_of("redis+sentinel://127.0.0.1:" + std::to_string(f.port()) + "/m"), file, 500'000'000, out);
    return f.accepted();
  };
  std::string why;
  CHECK(asked(pw, why) == 1);  // the user's, 0600: AUTH, then the answer
  CHECK(why.empty());
  REQUIRE(chmod(pw.c_str(), 0644) == 0);
  CHECK(asked(pw, why) == 0);
  CHECK(why.find("refused, nothing sent") != std::string::npos);
  REQUIRE(chmod(pw.c_str(), 0600) == 0);
  CHECK(asked(link, why) == 0);
  CHECK(why.find("symbolic link") != std::string::npos);
  CHECK(asked(std::string(dir), why) == 0);
  CHECK(why.find("not a regular file") != std::string::npos);

  // `check` and `load` say the same at the key's line and column.
  std::string yaml = std::string(dir) + "/services.yaml";
  FILE* y = std::fopen(yaml.c_str(), "w");
  REQUIRE(y);
  std::fprintf(y, "version: 1\nservices:\n  web:\n    fleet:\n      store: redis+sentinel://127.0.0.1:26379/main\n"
                  "      sentinel_password_file: %s\n    limits: [{calls: [write], rate: 8MiB/s}]\n", link.c_str());
  std::fclose(y);
  std::vector<Diag> diags;
  yaml_load_file(yaml, diags);
  REQUIRE(diags.size() == 1);
  CHECK(diag_format(diags[0]).rfind(yaml + ":6:31: sentinel_password_file " + link + " is a symbolic link", 0) == 0);
  REQUIRE(chmod(pw.c_str(), 0640) == 0);
  y = std::fopen(yaml.c_str(), "w");
  REQUIRE(y);
  std::fprintf(y, "version: 1\nservices:\n  web:\n    fleet:\n      store: redis+sentinel://127.0.0.1:26379/main\n"
                  "      sentinel_password_file: %s\n    limits: [{calls: [write], rate: 8MiB/s}]\n", pw.c_str());
  std::fclose(y);
  diags.clear();
  yaml_load_file(yaml, diags);
  REQUIRE(diags.size() == 1);
  CHECK(diag_format(diags[0]).rfind(yaml + ":6:31: sentinel_password_file ", 0) == 0);
  CHECK(diag_format(diags[0]).find("0640") != std::string::npos);
  unlink(yaml.c_str()), unlink(link.c_str()), unlink(pw.c_str()), rmdir(dir);
}
