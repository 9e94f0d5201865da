// SPDX-License-Identifier: MIT
// `bonsaictl serve [--listen ADDR:PORT] [--web-config FILE] [--max-requests N]
// [--max-per-address N] [SERVICE...]`: a Prometheus exporter. Answers `GET /metrics` with
// `stat --prometheus` for the named services (or every service of this user, found anew
// at each scrape); stops on SIGTERM/SIGINT. The options and the web configuration are
// checked here; the exporter is the serve room's (serve/exporter.h).
#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <fmt/core.h>
#include <netinet/in.h>

#include "cmd/commands.h"
#include "segment/shm_client.h"
#include "serve/exporter.h"
#include "serve/serve_guard.h"
#include "serve/web_config.h"

namespace bonsai::ctl {
namespace {

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

unsigned count_value(const std::string& text, const char* name) {
  char* end = nullptr;
  errno = 0;
  unsigned long v = std::strtoul(text.c_str(), &end, 10);
  if (text.empty() || !end || *end || errno || v > 1'000'000 || text[0] == '-')
    usage_error(fmt::format("bad {} '{}' (a count, 0 for no limit)", name, text));
  return static_cast<unsigned>(v);
}

constexpr CliOption kOptions[] = {
    {"-L, --listen", OptArg::Required, "ADDR:PORT",
     "where to listen (default 127.0.0.1:9464; [::1]:PORT for IPv6,\n:PORT for every IPv4 address)"},
    {"--web-config", OptArg::Required, "FILE",
     "TLS and basic auth: Prometheus' exporter-toolkit web config\n"
     "(tls_server_config, basic_auth_users with bcrypt hashes)"},
    {"--max-requests", OptArg::Required, "N", "requests answered at once; beyond, 503 (default 40, 0: no bound)"},
    {"--max-per-address", OptArg::Required, "N",
     "connections from one client address, loopback addresses\nexempt (default 256, 0: no bound)"},
};

int cmd_serve(const Args& args) {
  CliParsed p = options_parse(args, kOptions);
  std::string listen = p.value("--listen", "127.0.0.1:9464");
  std::string web_config = p.value("--web-config");
  PerAddress per_address;
  ExporterOptions ex;
  if (p.has("--max-requests")) ex.max_requests = count_value(p.value("--max-requests"), "--max-requests");
  if (p.has("--max-per-address")) per_address.limit = count_value(p.value("--max-per-address"), "--max-per-address");
  std::vector<std::string> names = p.words;
  names.insert(names.end(), p.rest.begin(), p.rest.end());
  for (const auto& n : names) segment_path(n), ex.services.push_back(n);  // validates the name
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
  }
  ex.listen = listen;
  ex.addr = addr;
  return exporter_run(ex, per_address);
}

}  // namespace

extern const Command kCmdServe{
    "serve", "serve [--listen ADDR:PORT] [--web-config FILE] [--max-requests N] [--max-per-address N] [SERVICE...]",
    "A Prometheus exporter: answers GET /metrics with the text `stat --prometheus`\n"
    "prints, for the named services or every service of this user (services that come\n"
    "and go are followed); root without --user serves every user's, with a `user` label.\n"
    "Stops cleanly on SIGTERM or SIGINT. Metrics: docs/reference/metrics.md.\n",
    kOptions,
    "Idle or half-sent connections are closed after 5 s; connections at most: the open-\n"
    "file limit (raised to its hard limit) less 64, up to 65536.\n"
    "exit status: 0 stopped by a signal, 1 cannot listen, 2 usage error or bad web config\n",
    cmd_serve};

}  // namespace bonsai::ctl
