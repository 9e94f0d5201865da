// SPDX-License-Identifier: MIT
// serve's guards (serve_guard.h): per-address connection counts, basic auth, client
// certificates through GnuTLS.
#include "serve/serve_guard.h"

#include <algorithm>
#include <arpa/inet.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <memory>
#include <netinet/in.h>

namespace bonsai::ctl {

// ---- Connections per client address ----

std::string address_key(const PerAddress& pa, const sockaddr* sa) {
  if (!sa || pa.limit == 0) return "";
  if (sa->sa_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(sa);
    if ((ntohl(a->sin_addr.s_addr) >> 24) == 127) return "";
    return std::string(reinterpret_cast<const char*>(&a->sin_addr), 4);
  }
  if (sa->sa_family == AF_INET6) {
    const in6_addr& x = reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&x) || (IN6_IS_ADDR_V4MAPPED(&x) && x.s6_addr[12] == 127)) return "";
    return std::string(reinterpret_cast<const char*>(&x), 16);
  }
  return "";
}

MHD_Result per_address_accept(void* cls, const sockaddr* sa, socklen_t) {
  auto* pa = static_cast<PerAddress*>(cls);
  std::string key = address_key(*pa, sa);
  if (key.empty()) return MHD_YES;
  std::lock_guard<std::mutex> lock(pa->mu);
  auto it = pa->open.find(key);
  return it == pa->open.end() || it->second < pa->limit ? MHD_YES : MHD_NO;
}

void per_address_notify(void* cls, MHD_Connection* c, void** socket_ctx, MHD_ConnectionNotificationCode code) {
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

// ---- Basic auth ----

bool BasicAuth::budget_take() {
  auto now = clock_();
  double s = std::chrono::duration<double>(now - refilled_).count();
  refilled_ = now;
  tokens_ = std::min(kBcryptPerSecond, tokens_ + s * kBcryptPerSecond);
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

BasicAuth::Result BasicAuth::check(const std::map<std::string, std::string>& users, const std::string& user,
                                   const std::string& pass) {
  auto it = users.find(user);
  Digest d{};
  gnutls_hash_fast(GNUTLS_DIG_SHA256, pass.data(), pass.size(), d.data());
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto g = good_.find(user);
    if (it != users.end() && g != good_.end()) {
      unsigned char diff = 0;  // constant time
      for (size_t i = 0; i < d.size(); ++i) diff |= static_cast<unsigned char>(g->second[i] ^ d[i]);
      if (diff == 0) return Result::Ok;
    }
    if (!budget_take()) return Result::Busy;
  }
  static const std::string kDummy = "$2b$10$JUWOG0GnPqeetgwJzyS3i.UhBMly5trLEHGkObpYKc1Zj5E/i7fRm";
  bool ok = bcrypt_check(pass, it == users.end() ? kDummy : it->second) && it != users.end();
  if (!ok) return Result::Denied;
  std::lock_guard<std::mutex> lock(mu_);
  good_[user] = d;
  return Result::Ok;
}

// ---- Client certificates ----

const char* client_cert_problem(const WebConfig& web, MHD_Connection* c) {
  if (!web.tls() || web.client_auth_type == "NoClientCert") return "";
  const MHD_ConnectionInfo* ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (!ci || !ci->tls_session) return "no TLS session\n";
  auto* session = static_cast<gnutls_session_t>(ci->tls_session);
  unsigned n = 0;
  if (!gnutls_certificate_get_peers(session, &n) || n == 0)
    return web.client_auth_type == "RequireAndVerifyClientCert" ? "a client certificate is required\n" : "";
  unsigned status = 0;
  if (gnutls_certificate_verify_peers2(session, &status) != GNUTLS_E_SUCCESS || status != 0)
    return "the client certificate is not signed by client_ca_file\n";
  return "";
}

}  // namespace bonsai::ctl
