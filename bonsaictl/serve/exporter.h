// SPDX-License-Identifier: MIT
// The Prometheus exporter (`bonsaictl serve`, docs/reference/metrics.md): answers `GET /metrics`
// with `stat --prometheus` for the named services, or every service of this user (root
// without --user: every user's, each with a `user` label), found anew at each scrape,
// through libmicrohttpd (epoll, a pool of threads, bounded connections and requests at
// once, idle connections closed, TLS and basic auth from the web configuration, the
// connections per client address of serve_guard.h). It runs until SIGTERM, SIGINT or
// SIGHUP.
#pragma once
#include <sys/socket.h>

#include <string>
#include <vector>

#include "serve/serve_guard.h"
#include "serve/web_config.h"

namespace bonsai::ctl {

inline constexpr unsigned kServeDefaultMaxRequests = 40;  // like node_exporter's --web.max-requests

struct ExporterOptions {
  std::vector<std::string> services;  // empty: all of this user's (root: all users')
  unsigned max_requests = kServeDefaultMaxRequests;  // requests answered at once (0: no bound)
  std::string listen;                 // the address as given (for messages)
  sockaddr_storage addr{};            // where to listen
  WebConfig web;                      // TLS and basic auth (checked: web_config_load)
};

// Serves until a stopping signal (blocked in every thread, taken with sigwait).
// @return kExitOk once stopped. Throws CtlError (runtime): cannot listen, no TLS in
// this libmicrohttpd while the web configuration asks for it.
int exporter_run(const ExporterOptions& opt, PerAddress& per_address);

}  // namespace bonsai::ctl
