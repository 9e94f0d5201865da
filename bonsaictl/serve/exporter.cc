// SPDX-License-Identifier: MIT
// The Prometheus exporter of `bonsaictl serve` (serve/exporter.h): libmicrohttpd with
// epoll, bounded connections and requests, TLS and basic auth from an exporter-toolkit
// web config (web_config.h, serve_guard.h); each scrape is `stat --prometheus` of the
// services, reopened when they come back.
#include "serve/exporter.h"

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstring>
#include <fmt/core.h>
#include <map>
#include <memory>
#include <microhttpd.h>
#include <mutex>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "segment/shm_client.h"
#include "segment/target_user.h"
#include "stat/stat_prometheus.h"
#include "stat/stat_snapshot.h"

namespace bonsai::ctl {
namespace {

constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

// ---- Limits (docs/reference/metrics.md, "Running `serve` safely") ----
// A connection that sends nothing for this long is closed (a half-sent request too).
constexpr unsigned kIdleTimeoutS = 5;
// Connections at most: this, or what RLIMIT_NOFILE allows less kReservedFds.
constexpr unsigned kMaxConnections = 65536;
constexpr unsigned kReservedFds = 64;  // segments, the listener, epoll, stdio
// Worker threads (each its own epoll): a slow scrape or a bcrypt check does not stall
// every connection.
constexpr unsigned kThreads = 2;
struct Exporter {
  std::vector<std::string> services;  // empty: all of this user's (root: all users')
  bool all_users = false;             // root without --user
  std::mutex mu;                      // libmicrohttpd may call from several threads
  std::map<std::string, std::unique_ptr<Segment>> open;  // kept open across scrapes
  WebConfig web;
  unsigned max_requests = kServeDefaultMaxRequests;  // 0: no bound
  std::atomic<unsigned> in_flight{0};           // requests being answered
  BasicAuth auth;

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

// Marks a request counted in Exporter::in_flight (its *req_cls), uncounted when done.
char kCounted;

void on_completed(void* cls, MHD_Connection*, void** req_cls, MHD_RequestTerminationCode) {
  if (*req_cls == &kCounted) static_cast<Exporter*>(cls)->in_flight.fetch_sub(1, std::memory_order_relaxed);
  *req_cls = nullptr;
}

MHD_Result on_request(void* cls, MHD_Connection* c, const char* url, const char* method, const char*, const char*,
                      size_t*, void** req_cls) {
  auto* ex = static_cast<Exporter*>(cls);
  if (*req_cls != &kCounted) {  // first call for this request: take a slot or 503
    if (ex->in_flight.fetch_add(1, std::memory_order_relaxed) >= ex->max_requests && ex->max_requests != 0) {
      ex->in_flight.fetch_sub(1, std::memory_order_relaxed);
      return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "too many requests at once (--max-requests)\n", "text/plain");
    }
    *req_cls = &kCounted;
  }
  if (const char* why = client_cert_problem(ex->web, c); *why) return reply(c, MHD_HTTP_FORBIDDEN, why, "text/plain");
  if (!ex->web.users.empty()) {
    char* pass = nullptr;
    char* user = MHD_basic_auth_get_username_password(c, &pass);
    auto auth = user && pass ? ex->auth.check(ex->web.users, user, pass) : BasicAuth::Result::Denied;
    MHD_free(user);
    MHD_free(pass);
    if (auth == BasicAuth::Result::Busy)
      return reply(c, MHD_HTTP_TOO_MANY_REQUESTS, "too many password checks at once: retry\n", "text/plain");
    if (auth == BasicAuth::Result::Denied) {
      static const char kBody[] = "unauthorized\n";
      MHD_Response* r = MHD_create_response_from_buffer(sizeof kBody - 1, const_cast<char*>(kBody), MHD_RESPMEM_PERSISTENT);
      if (!r) return MHD_NO;
      MHD_Result rc = MHD_queue_basic_auth_fail_response(c, "bonsai", r);
      MHD_destroy_response(r);
      return rc;
    }
  }
  if (std::strcmp(method, "GET") != 0 && std::strcmp(method, "HEAD") != 0)
    return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n", "text/plain");
  if (std::strcmp(url, "/metrics") == 0) return reply(c, MHD_HTTP_OK, ex->scrape(), kContentType);
  if (std::strcmp(url, "/") == 0)
    return reply(c, MHD_HTTP_OK, "<html><body><a href=\"/metrics\">bonsai metrics</a></body></html>\n", "text/html");
  return reply(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n", "text/plain");
}

// libmicrohttpd's complaints (a full connection table, a refused address), at most one
// line a second: a flood must not become a flood of log lines.
void log_limited(void*, const char* format, va_list ap) {
  static std::atomic<int64_t> last{0};
  static std::atomic<unsigned> dropped{0};
  int64_t now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  int64_t prev = last.load(std::memory_order_relaxed);
  if (now == prev || !last.compare_exchange_strong(prev, now)) {
    dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  char line[512];
  std::vsnprintf(line, sizeof line, format, ap);
  std::string text = line;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  unsigned d = dropped.exchange(0);
  fmt::print(stderr, "bonsaictl serve: {}{}\n", text, d ? fmt::format(" ({} more not shown)", d) : "");
}

// Raises RLIMIT_NOFILE's soft limit to the hard one.
// @return the connections we may hold: min(kMaxConnections, that limit - kReservedFds).
unsigned connection_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  rlim_t fds = rl.rlim_cur == RLIM_INFINITY ? kMaxConnections + kReservedFds : rl.rlim_cur;
  if (fds <= kReservedFds + 16) return 16;
  return static_cast<unsigned>(std::min<rlim_t>(kMaxConnections, fds - kReservedFds));
}

}  // namespace

int exporter_run(const ExporterOptions& opt, PerAddress& per_address) {
  Exporter ex;
  ex.services = opt.services;
  ex.web = opt.web;
  ex.max_requests = opt.max_requests;
  ex.all_users = geteuid() == 0 && !ctl_other_user() && ctl_user_name().empty();
  const std::string& listen = opt.listen;
  sockaddr_storage addr = opt.addr;
  if (ex.web.tls() && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
    runtime_error("this libmicrohttpd was built without TLS (GnuTLS): cannot serve tls_server_config");
  unsigned max_conn = connection_limit();
  // The signals that stop us are taken synchronously (sigwait), before any thread starts.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  // epoll: thousands of idle connections cost nothing per wakeup (poll would scan them all).
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  flags |= MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL : MHD_USE_POLL;
  if (addr.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  if (ex.web.tls()) flags |= MHD_USE_TLS;
  std::string priorities = ex.web.tls_priorities();
  std::vector<MHD_OptionItem> opts = {
      {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&log_limited), nullptr},  // first, or MHD warns
      {MHD_OPTION_SOCK_ADDR, 0, &addr},
      {MHD_OPTION_CONNECTION_TIMEOUT, kIdleTimeoutS, nullptr},
      {MHD_OPTION_CONNECTION_LIMIT, max_conn, nullptr},
      {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&per_address_notify), &per_address},
      {MHD_OPTION_THREAD_POOL_SIZE, kThreads, nullptr},
      {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&on_completed), &ex},
  };
  if (ex.web.tls()) {
    opts.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(ex.web.cert_pem.c_str())});
    opts.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(ex.web.key_pem.c_str())});
    opts.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(priorities.c_str())});
    if (!ex.web.client_ca_pem.empty())
      opts.push_back({MHD_OPTION_HTTPS_MEM_TRUST, 0, const_cast<char*>(ex.web.client_ca_pem.c_str())});
  }
  opts.push_back({MHD_OPTION_END, 0, nullptr});
  MHD_Daemon* d = MHD_start_daemon(flags, 0, &per_address_accept, &per_address, &on_request, &ex, MHD_OPTION_ARRAY, opts.data(),
                                   MHD_OPTION_END);
  if (!d)
    runtime_error(fmt::format("cannot listen on {}{}: {}", listen,
                              ex.web.tls() ? " (or the TLS certificate and key do not fit together)" : "",
                              std::strerror(errno)));
  fmt::print(stderr,
             "bonsaictl serve: metrics on {}://{}/metrics ({} connections at most, {} per non-loopback address, "
             "{} requests at once{})\n",
             ex.web.tls() ? "https" : "http", listen, max_conn, per_address.limit, ex.max_requests,
             ex.web.users.empty() ? "" : ", basic auth");
  int sig = 0;
  sigwait(&stop, &sig);
  MHD_stop_daemon(d);
  fmt::print(stderr, "bonsaictl serve: stopped ({})\n", strsignal(sig));
  return kExitOk;
}

}  // namespace bonsai::ctl
