// SPDX-License-Identifier: MIT
// The exporter-toolkit web configuration (web_config.h): yaml-cpp -> WebConfig with
// the position of every problem, the certificate files read once at start, and the
// bcrypt check through libxcrypt's crypt_rn.
#include "serve/web_config.h"

#include <cerrno>
#include <crypt.h>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <gnutls/gnutls.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "config/yaml_strict.h"

namespace bonsai::ctl {
namespace {

constexpr size_t kMaxWebFileBytes = size_t{1} << 20;

// The whole of a regular file of at most kMaxWebFileBytes, or "" with `err` set.
std::string file_read_small(const std::string& path, std::string& err) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return err = std::strerror(errno), "";
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return err = "not a regular file", "";
  }
  std::string text(kMaxWebFileBytes + 1, '\0');
  size_t used = 0;
  while (used < text.size()) {
    ssize_t n = ::read(fd, text.data() + used, text.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += static_cast<size_t>(n);
  }
  ::close(fd);
  if (used > kMaxWebFileBytes) return err = "larger than 1 MiB", "";
  text.resize(used);
  return text;
}

gnutls_datum_t datum_of(const std::string& s) {
  return {reinterpret_cast<unsigned char*>(const_cast<char*>(s.data())), static_cast<unsigned>(s.size())};
}

// What GnuTLS thinks of the certificate and key (parse, and that they belong together),
// and of the client CA: "" if fine. The same checks libmicrohttpd makes at start.
std::string tls_problem(const WebConfig& wc, bool& ca_bad) {
  gnutls_certificate_credentials_t cred = nullptr;
  if (gnutls_certificate_allocate_credentials(&cred) < 0) return "GnuTLS cannot allocate credentials";
  gnutls_datum_t cert = datum_of(wc.cert_pem), key = datum_of(wc.key_pem), ca = datum_of(wc.client_ca_pem);
  std::string why;
  int rc = gnutls_certificate_set_x509_key_mem2(cred, &cert, &key, GNUTLS_X509_FMT_PEM, nullptr, 0);
  if (rc < 0) why = fmt::format("cert_file and key_file: {}", gnutls_strerror(rc));
  else if (!wc.client_ca_pem.empty() && (rc = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM)) <= 0)
    ca_bad = true, why = fmt::format("client_ca_file: {}", rc == 0 ? "no certificate in it" : gnutls_strerror(rc));
  gnutls_certificate_free_credentials(cred);
  return why;
}

bool is_bcrypt(const std::string& h) {
  return h.size() == 60 && (h.rfind("$2a$", 0) == 0 || h.rfind("$2b$", 0) == 0 || h.rfind("$2y$", 0) == 0);
}

class WebLoader {
 public:
  WebLoader(const std::string& file, const std::string& dir, std::vector<Diag>& diags)
      : file_(file), dir_(dir), diags_(diags) {}

  void top(const YAML::Node& root, WebConfig& wc) {
    if (root.IsNull()) return;  // an empty file: plain HTTP, no auth (as exporter-toolkit)
    if (!root.IsMap()) return error(root, "a web configuration is a mapping (tls_server_config, basic_auth_users)");
    for (const auto& kv : root) {
      std::string k = kv.first.as<std::string>();
      if (k == "tls_server_config") tls(kv.second, wc);
      else if (k == "basic_auth_users") users(kv.second, wc);
      else if (k == "http_server_config") error(kv.first, "'http_server_config' is not supported by bonsaictl serve");
      else unknown(kv.first, "the web configuration", {"tls_server_config", "basic_auth_users", "http_server_config"});
    }
  }

 private:
  const std::string& file_;
  const std::string& dir_;
  std::vector<Diag>& diags_;

  void error(const YAML::Node& at, std::string msg) { diags_.push_back(diag_at(file_, at.Mark(), std::move(msg))); }

  void unknown(const YAML::Node& key, const char* where, const std::vector<std::string_view>& known) {
    std::string k = key.as<std::string>();
    std::string_view hint = closest_word(k, known);
    error(key, hint.empty() ? fmt::format("unknown key '{}' in {}", k, where)
                            : fmt::format("unknown key '{}' in {} (did you mean '{}'?)", k, where, hint));
  }

  // A scalar string value, or "" with an error.
  std::string scalar(const YAML::Node& v, const std::string& key) {
    if (!v.IsScalar()) return error(v, fmt::format("'{}' must be a string", key)), "";
    return v.as<std::string>();
  }

  // Reads the file a key names (relative to the configuration's directory).
  std::string pem(const YAML::Node& v, const std::string& key, std::string& path) {
    path = scalar(v, key);
    if (path.empty()) return "";
    std::string full = path[0] == '/' || dir_.empty() ? path : dir_ + "/" + path;
    std::string err;
    std::string text = file_read_small(full, err);
    if (!err.empty()) return error(v, fmt::format("{}: cannot read '{}' ({})", key, full, err)), "";
    if (text.find("-----BEGIN ") == std::string::npos)
      return error(v, fmt::format("{}: '{}' is not a PEM file", key, full)), "";
    return text;
  }

  void tls(const YAML::Node& node, WebConfig& wc) {
    if (node.IsNull()) return;
    if (!node.IsMap()) return error(node, "'tls_server_config' must be a mapping (cert_file, key_file, ...)");
    for (const auto& kv : node) {
      std::string k = kv.first.as<std::string>();
      if (k == "cert_file") wc.cert_pem = pem(kv.second, k, wc.cert_file);
      else if (k == "key_file") wc.key_pem = pem(kv.second, k, wc.key_file);
      else if (k == "client_ca_file") wc.client_ca_pem = pem(kv.second, k, wc.client_ca_file);
      else if (k == "client_auth_type") {
        wc.client_auth_type = scalar(kv.second, k);
        if (wc.client_auth_type != "NoClientCert" && wc.client_auth_type != "RequireAndVerifyClientCert" &&
            wc.client_auth_type != "VerifyClientCertIfGiven")
          error(kv.second, fmt::format("client_auth_type '{}' is not supported by bonsaictl serve (NoClientCert, "
                                       "VerifyClientCertIfGiven, RequireAndVerifyClientCert)",
                                       wc.client_auth_type));
      } else if (k == "min_version") {
        wc.min_version = scalar(kv.second, k);
        if (wc.min_version != "TLS10" && wc.min_version != "TLS11" && wc.min_version != "TLS12" &&
            wc.min_version != "TLS13")
          error(kv.second, fmt::format("bad min_version '{}' (TLS10, TLS11, TLS12, TLS13)", wc.min_version));
      } else if (k == "max_version" || k == "cipher_suites" || k == "curve_preferences" ||
                 k == "prefer_server_cipher_suites" || k == "client_allowed_sans")
        error(kv.first, fmt::format("'{}' is not supported by bonsaictl serve", k));
      else
        unknown(kv.first, "tls_server_config",
                {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version", "max_version",
                 "cipher_suites", "curve_preferences", "prefer_server_cipher_suites", "client_allowed_sans"});
    }
    if (wc.cert_file.empty() || wc.key_file.empty()) error(node, "tls_server_config needs cert_file and key_file");
    else if (!wc.cert_pem.empty() && !wc.key_pem.empty()) {
      bool ca_bad = false;
      std::string why = tls_problem(wc, ca_bad);
      if (!why.empty()) error(ca_bad ? node["client_ca_file"] : node["key_file"], why);
    }
    if (wc.client_auth_type != "NoClientCert" && wc.client_ca_file.empty())
      error(node, fmt::format("client_auth_type {} needs client_ca_file", wc.client_auth_type));
  }

  void users(const YAML::Node& node, WebConfig& wc) {
    if (node.IsNull()) return;
    if (!node.IsMap()) return error(node, "'basic_auth_users' must be a mapping of user: bcrypt-hash");
    for (const auto& kv : node) {
      std::string user = kv.first.as<std::string>();
      std::string hash = scalar(kv.second, user);
      if (user.empty() || user.find(':') != std::string::npos)
        error(kv.first, fmt::format("bad user name '{}' (not empty, no ':')", user));
      else if (!hash.empty() && !is_bcrypt(hash))
        error(kv.second, fmt::format("the password of '{}' must be a bcrypt hash ($2y$..., from htpasswd -nBC 10 "
                                     "USER, or python3 -c 'import crypt; ...')",
                                     user));
      else wc.users[user] = hash;
    }
  }
};

}  // namespace

std::string WebConfig::tls_priorities() const {
  const char* vers = min_version == "TLS13"   ? "+VERS-TLS1.3"
                     : min_version == "TLS12" ? "+VERS-TLS1.3:+VERS-TLS1.2"
                     : min_version == "TLS11" ? "+VERS-TLS1.3:+VERS-TLS1.2:+VERS-TLS1.1"
                                              : "+VERS-TLS1.3:+VERS-TLS1.2:+VERS-TLS1.1:+VERS-TLS1.0";
  return fmt::format("NORMAL:-VERS-ALL:{}", vers);
}

WebConfig web_config_parse(const std::string& text, const std::string& file, const std::string& dir,
                           std::vector<Diag>& diags) {
  WebConfig wc;
  try {
    YAML::Node root = YAML::Load(text);
    WebLoader{file, dir, diags}.top(root, wc);
  } catch (const YAML::Exception& e) {
    diags.push_back(diag_at(file, e.mark.is_null() ? YAML::Mark{} : e.mark, e.msg));
  }
  return wc;
}

WebConfig web_config_load(const std::string& path, std::vector<Diag>& diags) {
  std::string err;
  std::string text = file_read_small(path, err);
  if (!err.empty()) {
    diags.push_back(Diag{path, 0, 0, fmt::format("cannot read the web configuration ({})", err)});
    return {};
  }
  size_t slash = path.rfind('/');
  return web_config_parse(text, path, slash == std::string::npos ? "." : path.substr(0, slash), diags);
}

bool bcrypt_check(const std::string& password, const std::string& hash) {
  if (!is_bcrypt(hash)) return false;
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_rn(password.c_str(), hash.c_str(), data.get(), sizeof(crypt_data));
  if (!out || std::strlen(out) != hash.size()) return false;
  unsigned char diff = 0;  // constant time: every byte compared
  for (size_t i = 0; i < hash.size(); ++i) diff |= static_cast<unsigned char>(out[i] ^ hash[i]);
  return diff == 0;
}

}  // namespace bonsai::ctl
