// SPDX-License-Identifier: MIT
// `serve --web-config FILE`: the Prometheus exporter-toolkit web configuration
// (https://prometheus.io/docs/prometheus/latest/configuration/https/): TLS and basic
// auth. Parsing, file reading and the bcrypt check only; nothing here listens.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "base/diag.h"

namespace bonsai::ctl {

struct WebConfig {
  // tls_server_config (TLS is on when cert_pem is not empty)
  std::string cert_file, key_file;      // as written, relative to the file's directory
  std::string cert_pem, key_pem;        // their contents
  std::string client_auth_type = "NoClientCert";  // or RequireAndVerifyClientCert
  std::string client_ca_file, client_ca_pem;
  std::string min_version = "TLS12";    // TLS10 TLS11 TLS12 TLS13
  // basic_auth_users: user -> bcrypt hash ($2a$, $2b$, $2y$)
  std::map<std::string, std::string> users;

  bool tls() const { return !cert_pem.empty(); }
  // The GnuTLS priority string for min_version.
  std::string tls_priorities() const;
};

// Parses `text` (named `file` in diagnostics; relative paths in it are read from
// `dir`). Every problem is appended to `diags` with its line and column (bad YAML,
// unknown keys with "did you mean", unreadable cert/key files, a certificate and key
// GnuTLS cannot load or that do not match, a client CA with no certificate, hashes that
// are not bcrypt). The result is usable only if nothing was appended. Never throws.
WebConfig web_config_parse(const std::string& text, const std::string& file, const std::string& dir,
                           std::vector<Diag>& diags);

// Reads and parses `path` (at most 1 MiB); a missing file is a diagnostic too.
WebConfig web_config_load(const std::string& path, std::vector<Diag>& diags);

// Whether `password` matches the bcrypt `hash` (crypt_rn from libxcrypt); false for a
// hash that is not bcrypt. Cost: one bcrypt, 2^cost rounds (~70 ms at cost 10).
[[nodiscard]] bool bcrypt_check(const std::string& password, const std::string& hash);

}  // namespace bonsai::ctl
