// SPDX-License-Identifier: MIT
// `bonsaictl serve [--listen ADDR:PORT] [--web-config FILE] [--max-requests N]
// [--max-per-address N] [SERVICE...]`: a Prometheus exporter. Answers `GET /metrics` with
// `stat --prometheus` for the named services (or every service of this user, found anew
// at each scrape) through libmicrohttpd (epoll, bounded connections and requests, TLS and
// basic auth from an exporter-toolkit web config, see #36); stops on SIGTERM/SIGINT.
#include <algorithm>
#include <arpa/inet.h>
#include <array>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstring>
#include <fmt/core.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <map>
#include <memory>
#include <microhttpd.h>
#include <mutex>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/resource.h>
#include <unistd.h>
#include <unordered_map>

#include "commands.h"
#include "shm_client.h"
#include "stat_prometheus.h"
#include "stat_snapshot.h"
#include "web_config.h"

namespace bonsai::ctl {
namespace {

constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

// ---- Limits (docs/metrics.md, "Running `serve` safely") ----
// A connection that sends nothing for this long is closed (a half-sent request too).
constexpr unsigned kIdleTimeoutS = 5;
// Connections at most: this, or what RLIMIT_NOFILE allows less kReservedFds.
constexpr unsigned kMaxConnections = 65536;
constexpr unsigned kReservedFds = 64;  // segments, the listener, epoll, stdio
// Worker threads (each its own epoll): a slow scrape or a bcrypt check does not stall
// every connection.
constexpr unsigned kThreads = 2;
constexpr unsigned kDefaultMaxRequests = 40;   // like node_exporter's --web.max-requests
constexpr unsigned kDefaultMaxPerAddress = 256;
// bcrypt checks a second, all clients together (~0.35 of a core at cost 10): a client
// sending wrong passwords cannot take the CPU. A password that matched once is not
// checked again (its SHA-256 is remembered), so scrapes never wait for this.
constexpr double kBcryptPerSecond = 5;

using Digest = std::array<unsigned char, 32>;

Digest digest_of(const std::string& text) {
  Digest d{};
  gnutls_hash_fast(GNUTLS_DIG_SHA256, text.data(), text.size(), d.data());
  return d;
}

bool digest_equal(const Digest& a, const Digest& b) {  // constant time
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

struct Exporter {
  std::vector<std::string> services;  // empty: all of this user's (root: all users')
  bool all_users = false;             // root without --user
  std::mutex mu;                      // libmicrohttpd may call from several threads
  std::map<std::string, std::unique_ptr<Segment>> open;  // kept open across scrapes
  WebConfig web;
  unsigned max_requests = kDefaultMaxRequests;  // 0: no bound
  std::atomic<unsigned> in_flight{0};           // requests being answered
  std::mutex auth_mu;
  std::map<std::string, Digest> auth_good;  // user -> SHA-256 of the password that last matched

  enum class Auth { Ok, Denied, Busy };
  double bcrypt_tokens = kBcryptPerSecond;  // under auth_mu
  std::chrono::steady_clock::time_point bcrypt_refilled = std::chrono::steady_clock::now();

  // Takes one of the kBcryptPerSecond checks of this second. Call with auth_mu held.
  bool bcrypt_budget_take() {
    auto now = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(now - bcrypt_refilled).count();
    bcrypt_refilled = now;
    bcrypt_tokens = std::min<double>(kBcryptPerSecond, bcrypt_tokens + s * kBcryptPerSecond);
    if (bcrypt_tokens < 1) return false;
    bcrypt_tokens -= 1;
    return true;
  }

  // Whether `user`:`pass` is one of basic_auth_users. A match is remembered as its
  // SHA-256 (one bcrypt per user, not per scrape; no password kept); an unknown user
  // costs a bcrypt too (timing). Other checks share kBcryptPerSecond: Busy beyond.
  // Cost: a SHA-256, or one bcrypt (~70 ms at cost 10).
  Auth auth_check(const std::string& user, const std::string& pass) {
    auto it = web.users.find(user);
    Digest d = digest_of(pass);
    {
      std::lock_guard<std::mutex> lock(auth_mu);
      auto g = auth_good.find(user);
      if (it != web.users.end() && g != auth_good.end() && digest_equal(g->second, d)) return Auth::Ok;
      if (!bcrypt_budget_take()) return Auth::Busy;
    }
    static const std::string kDummy = "$2b$10$JUWOG0GnPqeetgwJzyS3i.UhBMly5trLEHGkObpYKc1Zj5E/i7fRm";
    bool ok = bcrypt_check(pass, it == web.users.end() ? kDummy : it->second) && it != web.users.end();
    if (!ok) return Auth::Denied;
    std::lock_guard<std::mutex> lock(auth_mu);
    auth_good[user] = d;
    return Auth::Ok;
  }

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

// ---- Connections per client address ----
// libmicrohttpd's own per-IP limit counts loopback addresses too; then a local user
// holding --max-per-address connections from 127.0.0.1 would shut out a Prometheus
// scraping from there. Loopback is exempt here: any local user has all of 127/8 anyway,
// so a bound on one of its addresses protects nothing (the table's size does).
struct PerAddress {
  unsigned limit = kDefaultMaxPerAddress;  // 0: no bound
  std::mutex mu;
  std::unordered_map<std::string, unsigned> open;  // address bytes -> connections
};

// The address's bytes, or "" when it is exempt (loopback, or no bound).
std::string address_key(const PerAddress& pa, const sockaddr* sa) {
  if (!sa || pa.limit == 0) return "";
  if (sa->sa_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(sa);
    if ((ntohl(a->sin_addr.s_addr) >> 24) == 127) return "";
    return std::string(reinterpret_cast<const char*>(&a->sin_addr), 4);
  }
  if (sa->sa_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(sa);
    const in6_addr& x = a->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&x) || (IN6_IS_ADDR_V4MAPPED(&x) && x.s6_addr[12] == 127)) return "";
    return std::string(reinterpret_cast<const char*>(&x), 16);
  }
  return "";
}

// Accept policy: refuses an address that holds `limit` connections already.
MHD_Result on_accept(void* cls, const sockaddr* sa, socklen_t) {
  auto* pa = static_cast<PerAddress*>(cls);
  std::string key = address_key(*pa, sa);
  if (key.empty()) return MHD_YES;
  std::lock_guard<std::mutex> lock(pa->mu);
  auto it = pa->open.find(key);
  return it == pa->open.end() || it->second < pa->limit ? MHD_YES : MHD_NO;
}

// Counts a connection of a bounded address from start to close (its key in *socket_ctx).
void on_connection(void* cls, MHD_Connection* c, void** socket_ctx, MHD_ConnectionNotificationCode code) {
  auto* pa = static_cast<PerAddress*>(cls);
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const MHD_ConnectionInfo* ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    std::string key = address_key(*pa, ci ? ci->client_addr : nullptr);
    if (key.empty()) return;
    std::lock_guard<std::mutex> lock(pa->mu);
    ++pa->open[key];
    *socket_ctx = new std::string(std::move(key));
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_ctx) {
    std::unique_ptr<std::string> key(static_cast<std::string*>(*socket_ctx));
    *socket_ctx = nullptr;
    std::lock_guard<std::mutex> lock(pa->mu);
    auto it = pa->open.find(*key);
    if (it != pa->open.end() && --it->second == 0) pa->open.erase(it);
  }
}

// Marks a request counted in Exporter::in_flight (its *req_cls), uncounted when done.
char kCounted;

void on_completed(void* cls, MHD_Connection*, void** req_cls, MHD_RequestTerminationCode) {
  if (*req_cls == &kCounted) static_cast<Exporter*>(cls)->in_flight.fetch_sub(1, std::memory_order_relaxed);
  *req_cls = nullptr;
}

// The client certificate, when client_auth_type asks for one: "" if acceptable.
const char* client_cert_problem(const Exporter& ex, MHD_Connection* c) {
  if (!ex.web.tls() || ex.web.client_auth_type == "NoClientCert") return "";
  const MHD_ConnectionInfo* ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (!ci || !ci->tls_session) return "no TLS session\n";
  auto* session = static_cast<gnutls_session_t>(ci->tls_session);
  unsigned n = 0;
  if (!gnutls_certificate_get_peers(session, &n) || n == 0)
    return ex.web.client_auth_type == "RequireAndVerifyClientCert" ? "a client certificate is required\n" : "";
  unsigned status = 0;
  if (gnutls_certificate_verify_peers2(session, &status) != GNUTLS_E_SUCCESS || status != 0)
    return "the client certificate is not signed by client_ca_file\n";
  return "";
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
  if (const char* why = client_cert_problem(*ex, c); *why) return reply(c, MHD_HTTP_FORBIDDEN, why, "text/plain");
  if (!ex->web.users.empty()) {
    char* pass = nullptr;
    char* user = MHD_basic_auth_get_username_password(c, &pass);
    auto auth = user && pass ? ex->auth_check(user, pass) : Exporter::Auth::Denied;
    MHD_free(user);
    MHD_free(pass);
    if (auth == Exporter::Auth::Busy)
      return reply(c, MHD_HTTP_TOO_MANY_REQUESTS, "too many password checks at once: retry\n", "text/plain");
    if (auth == Exporter::Auth::Denied) {
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

unsigned count_value(const Args& args, size_t& i, const char* name) {
  std::string text = option_value(args, i);
  char* end = nullptr;
  errno = 0;
  unsigned long v = std::strtoul(text.c_str(), &end, 10);
  if (text.empty() || !end || *end || errno || v > 1'000'000 || text[0] == '-')
    usage_error(fmt::format("bad {} '{}' (a count, 0 for no limit)", name, text));
  return static_cast<unsigned>(v);
}

int cmd_serve(const Args& args) {
  std::string listen = "127.0.0.1:9464";
  std::string web_config;
  PerAddress per_address;
  Exporter ex;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--listen" || args[i] == "-L") listen = option_value(args, i);
    else if (args[i].rfind("--listen=", 0) == 0) listen = args[i].substr(9);
    else if (args[i] == "--web-config") web_config = option_value(args, i);
    else if (args[i] == "--max-requests") ex.max_requests = count_value(args, i, "--max-requests");
    else if (args[i] == "--max-per-address") per_address.limit = count_value(args, i, "--max-per-address");
    else if (!args[i].empty() && args[i][0] == '-') usage_error(fmt::format("unknown option '{}'", args[i]));
    else segment_path(args[i]), ex.services.push_back(args[i]);  // validates the name
  }
  ex.all_users = geteuid() == 0 && !ctl_other_user() && ctl_user_name().empty();
  socklen_t len = 0;
  sockaddr_storage addr = listen_parse(listen, len);
  if (!web_config.empty()) {
    std::vector<Diag> diags;
    ex.web = web_config_load(web_config, diags);
    if (!diags.empty()) {
      diags_print(diags);
      fmt::print(stderr, "bonsaictl serve: {}: {} error{}; not started\n", web_config, diags.size(),
                 diags.size() == 1 ? "" : "s");
      return kExitUsage;
    }
    if (ex.web.tls() && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
      runtime_error("this libmicrohttpd was built without TLS (GnuTLS): cannot serve tls_server_config");
  }
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
      {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&on_connection), &per_address},
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
  MHD_Daemon* d = MHD_start_daemon(flags, 0, &on_accept, &per_address, &on_request, &ex, MHD_OPTION_ARRAY, opts.data(),
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

}  // namespace

extern const Command kCmdServe{
    "serve", "serve [--listen ADDR:PORT] [--web-config FILE] [--max-requests N] [--max-per-address N] [SERVICE...]",
    "A Prometheus exporter: answers GET /metrics with the text `stat --prometheus`\n"
    "prints, for the named services or every service of this user (services that come\n"
    "and go are followed); root without --user serves every user's, with a `user` label.\n"
    "Stops cleanly on SIGTERM or SIGINT. Metrics: docs/metrics.md.\n"
    "  --listen ADDR:PORT  where to listen (default 127.0.0.1:9464; [::1]:PORT for IPv6,\n"
    "                      :PORT for every IPv4 address)\n"
    "  --web-config FILE   TLS and basic auth: Prometheus' exporter-toolkit web config\n"
    "                      (tls_server_config, basic_auth_users with bcrypt hashes)\n"
    "  --max-requests N    requests answered at once; beyond, 503 (default 40, 0: no bound)\n"
    "  --max-per-address N connections from one client address, loopback addresses\n"
    "                      exempt (default 256, 0: no bound)\n"
    "Idle or half-sent connections are closed after 5 s; connections at most: the open-\n"
    "file limit (raised to its hard limit) less 64, up to 65536.\n"
    "exit status: 0 stopped by a signal, 1 cannot listen, 2 usage error or bad web config\n",
    cmd_serve};

}  // namespace bonsai::ctl
