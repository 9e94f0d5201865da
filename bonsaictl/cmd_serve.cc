// SPDX-License-Identifier: MIT
// `bonsaictl serve [--listen ADDR:PORT] [SERVICE...]`: a Prometheus exporter. Answers
// `GET /metrics` with `stat --prometheus` for the named services (or every service of
// this user, found anew at each scrape) through libmicrohttpd; stops on SIGTERM/SIGINT.
#include <algorithm>
#include <arpa/inet.h>
#include <csignal>
#include <cstring>
#include <fmt/core.h>
#include <map>
#include <memory>
#include <microhttpd.h>
#include <mutex>
#include <netinet/in.h>
#include <pwd.h>
#include <unistd.h>

#include "commands.h"
#include "shm_client.h"
#include "stat_prometheus.h"
#include "stat_snapshot.h"

namespace bonsai::ctl {
namespace {

constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

struct Exporter {
  std::vector<std::string> services;  // empty: all of this user's (root: all users')
  bool all_users = false;             // root without --user
  std::mutex mu;                      // libmicrohttpd may call from several threads
  std::map<std::string, std::unique_ptr<Segment>> open;  // kept open across scrapes

  // The exposition of every service now; a service that disappeared or broke is left
  // out (and reopened when it comes back).
  std::string scrape() {
    std::lock_guard<std::mutex> lock(mu);
    // Root without --user sees every user's services, each labeled with its user.
    bool everyone = all_users && services.empty();
    std::vector<std::pair<unsigned, std::string>> names;
    if (everyone) names = services_list_all_users();
    else
      for (const auto& n : services.empty() ? services_list() : services) names.emplace_back(ctl_uid(), n);
    std::vector<ServiceStat> stats;
    std::vector<std::string> users;
    std::vector<std::string> keys;
    for (const auto& [uid, name] : names) {
      std::string key = std::to_string(uid) + "/" + name;
      keys.push_back(key);
      try {
        TargetUserScope as(everyone ? std::to_string(uid) : std::string());
        auto& seg = open[key];
        if (seg && seg->file_state() != FileState::Same) seg.reset();
        if (!seg) seg = Segment::open(name, false);
        stats.push_back(stat_snapshot(*seg));
        const passwd* pw = getpwuid(uid);
        users.push_back(!everyone ? "" : pw ? pw->pw_name : std::to_string(uid));
      } catch (const CtlError&) {
        open.erase(key);
      }
    }
    std::erase_if(open, [&](const auto& kv) { return std::find(keys.begin(), keys.end(), kv.first) == keys.end(); });
    std::vector<LabeledStat> labeled;
    for (size_t i = 0; i < stats.size(); ++i) labeled.push_back({&stats[i], users[i]});
    return prometheus_text(labeled);
  }
};

MHD_Result reply(MHD_Connection* c, unsigned status, const std::string& body, const char* type) {
  MHD_Response* r = MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  MHD_add_response_header(r, "Content-Type", type);
  MHD_Result rc = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return rc;
}

MHD_Result on_request(void* cls, MHD_Connection* c, const char* url, const char* method, const char*, const char*,
                      size_t*, void**) {
  auto* ex = static_cast<Exporter*>(cls);
  if (std::strcmp(method, "GET") != 0 && std::strcmp(method, "HEAD") != 0)
    return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n", "text/plain");
  if (std::strcmp(url, "/metrics") == 0) return reply(c, MHD_HTTP_OK, ex->scrape(), kContentType);
  if (std::strcmp(url, "/") == 0)
    return reply(c, MHD_HTTP_OK, "<html><body><a href=\"/metrics\">bonsai metrics</a></body></html>\n", "text/html");
  return reply(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n", "text/plain");
}

// "127.0.0.1:9464", "[::1]:9464", ":9464" (all IPv4 addresses).
sockaddr_storage listen_parse(const std::string& text, socklen_t& len) {
  sockaddr_storage ss{};
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) usage_error(fmt::format("bad --listen '{}' (ADDR:PORT)", text));
  std::string host = text.substr(0, colon), port_text = text.substr(colon + 1);
  char* end = nullptr;
  long port = std::strtol(port_text.c_str(), &end, 10);
  if (!end || *end || port < 1 || port > 65535) usage_error(fmt::format("bad port in --listen '{}'", text));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &a6->sin6_addr) != 1)
      usage_error(fmt::format("bad address in --listen '{}'", text));
    len = sizeof(sockaddr_in6);
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&ss);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(static_cast<uint16_t>(port));
    if (host.empty()) a4->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (inet_pton(AF_INET, host.c_str(), &a4->sin_addr) != 1)
      usage_error(fmt::format("bad address in --listen '{}' (IPv4, or [IPv6])", text));
    len = sizeof(sockaddr_in);
  }
  return ss;
}

int cmd_serve(const Args& args) {
  std::string listen = "127.0.0.1:9464";
  Exporter ex;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--listen" || args[i] == "-L") listen = option_value(args, i);
    else if (args[i].rfind("--listen=", 0) == 0) listen = args[i].substr(9);
    else if (!args[i].empty() && args[i][0] == '-') usage_error(fmt::format("unknown option '{}'", args[i]));
    else segment_path(args[i]), ex.services.push_back(args[i]);  // validates the name
  }
  ex.all_users = geteuid() == 0 && !ctl_other_user() && ctl_user_name().empty();
  socklen_t len = 0;
  sockaddr_storage addr = listen_parse(listen, len);
  // The signals that stop us are taken synchronously (sigwait), before any thread starts.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  if (addr.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  MHD_Daemon* d = MHD_start_daemon(flags, 0, nullptr, nullptr, &on_request, &ex, MHD_OPTION_SOCK_ADDR,
                                   reinterpret_cast<sockaddr*>(&addr), MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                                   MHD_OPTION_END);
  if (!d) runtime_error(fmt::format("cannot listen on {}: {}", listen, std::strerror(errno)));
  fmt::print(stderr, "bonsaictl serve: metrics on http://{}/metrics\n", listen);
  int sig = 0;
  sigwait(&stop, &sig);
  MHD_stop_daemon(d);
  fmt::print(stderr, "bonsaictl serve: stopped ({})\n", strsignal(sig));
  return kExitOk;
}

}  // namespace

extern const Command kCmdServe{
    "serve", "serve [--listen ADDR:PORT] [SERVICE...]",
    "A Prometheus exporter: answers GET /metrics with the text `stat --prometheus`\n"
    "prints, for the named services or every service of this user (services that come\n"
    "and go are followed); root without --user serves every user's, with a `user` label.\n"
    "Stops cleanly on SIGTERM or SIGINT. Metrics: docs/metrics.md.\n"
    "  --listen ADDR:PORT  where to listen (default 127.0.0.1:9464; [::1]:PORT for IPv6,\n"
    "                      :PORT for every IPv4 address)\n"
    "exit status: 0 stopped by a signal, 1 cannot listen, 2 usage error\n",
    cmd_serve};

}  // namespace bonsai::ctl
