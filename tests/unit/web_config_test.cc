// SPDX-License-Identifier: MIT
// Unit tests of bonsaictl/web_config (serve --web-config, #36): a good exporter-toolkit
// file, bad YAML and unknown keys reported at their position, unreadable certificate
// files, and the bcrypt check against hashes made by Python's crypt and htpasswd.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <unistd.h>

#include "cmd/commands.h"
#include "serve/web_config.h"

using namespace bonsai::ctl;

namespace {

// "s3cret", from python3 crypt.mksalt(METHOD_BLOWFISH) ($2b$) and htpasswd -nbB ($2y$).
constexpr const char* kHash2b = "$2b$10$InG0FGIk0.BnIKmKZQxWJeRmpc0BemjFHCK1wZ.8EceFohLI5187O";
constexpr const char* kHash2y = "$2y$10$RTGTxQzea/WA2hti7xpjLe92mOyq6lr40s.dPLv7IRo2d13dN00.O";

// A self-signed P-256 certificate and its key, made for this test only (openssl req
// -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 36500 -subj /CN=bonsai-test).
constexpr const char* kCertPem = R"(-----BEGIN CERTIFICATE-----
MIIBhDCCASmgAwIBAgIUG4uX8+v8LXeyAXmBcwgDRi+5Vr4wCgYIKoZIzj0EAwIw
FjEUMBIGA1UEAwwLYm9uc2FpLXRlc3QwIBcNMjYxMTI3MDQwMzEzWhgPMjEyNjEx
MDMwNDAzMTNaMBYxFDASBgNVBAMMC2JvbnNhaS10ZXN0MFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAEY9dhvtdHy6654w1KQfj2MYSkuz+o94ReLAkbiVAUt4DHEWge
3XsZOq8WCc8E/UhX0zQ6BSF0vzv/3Zns1gpbRqNTMFEwHQYDVR0OBBYEFCwik0XK
vTPrBbXs2WWGnAOsq3TlMB8GA1UdIwQYMBaAFCwik0XKvTPrBbXs2WWGnAOsq3Tl
MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhAKbICG/zJ94+wcVI
2BahAD17UKSi1nlrSgsB9Q3uhQfDAiEA2EHg+TFjnLnKx6n9/CpzpsZzppKnfDKL
CqJIXZkUDNs=
-----END CERTIFICATE-----
)";
constexpr const char* kKeyPem = R"(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgLWBZ0Arg1FwEJsSN
B7N9RNXGFaWBcO355haVjbU5KQehRANCAARj12G+10fLrrnjDUpB+PYxhKS7P6j3
hF4sCRuJUBS3gMcRaB7dexk6rxYJzwT9SFfTNDoFIXS/O//dmezWCltG
-----END PRIVATE KEY-----
)";

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/web_config_test.XXXXXX";
    path = mkdtemp(t);
    std::ofstream(path + "/cert.pem") << kCertPem;
    std::ofstream(path + "/key.pem") << kKeyPem;
    std::ofstream(path + "/junk.pem") << "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n";
  }
  ~TempDir() {
    for (const char* f : {"/cert.pem", "/key.pem", "/junk.pem"}) std::remove((path + f).c_str());
    rmdir(path.c_str());
  }
};

// `bonsaictl serve ARGS...` with its output silenced: @return its exit status (only
// for arguments that stop it before it listens).
int serve_rc(std::vector<std::string> args) {
  args.insert(args.begin(), {"bonsaictl", "serve"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stderr);
  int err = dup(2), null = open("/dev/null", O_WRONLY);
  dup2(null, 2);
  int rc = ctl_main(static_cast<int>(args.size()), argv.data());
  std::fflush(stderr);
  dup2(err, 2);
  close(err), close(null);
  return rc;
}

std::string only(const std::vector<Diag>& diags) {
  REQUIRE(diags.size() == 1);
  return diag_format(diags[0]);
}

}  // namespace

TEST_CASE("web config: TLS and basic auth from a good file", "[web_config]") {
  TempDir d;
  std::vector<Diag> diags;
  WebConfig wc = web_config_parse(std::string("tls_server_config:\n  cert_file: cert.pem\n  key_file: ") + d.path +
                                      "/key.pem\n  min_version: TLS13\nbasic_auth_users:\n  prom: " + kHash2b + "\n",
                                  "web.yml", d.path, diags);
  CHECK(diags.empty());
  CHECK(wc.tls());
  CHECK(wc.cert_file == "cert.pem");
  CHECK(wc.key_pem.find("PRIVATE KEY") != std::string::npos);
  CHECK(wc.tls_priorities() == "NORMAL:-VERS-ALL:+VERS-TLS1.3");
  REQUIRE(wc.users.size() == 1);
  CHECK(wc.users.at("prom") == kHash2b);
}

TEST_CASE("web config: an empty file is plain HTTP without auth", "[web_config]") {
  std::vector<Diag> diags;
  WebConfig wc = web_config_parse("", "web.yml", ".", diags);
  CHECK(diags.empty());
  CHECK_FALSE(wc.tls());
  CHECK(wc.users.empty());
}

TEST_CASE("web config: bad YAML is reported at its line and column", "[web_config]") {
  std::vector<Diag> diags;
  web_config_parse("basic_auth_users:\n  prom: [unclosed\n", "web.yml", ".", diags);
  std::string d = only(diags);
  CHECK(d.rfind("web.yml:", 0) == 0);
  CHECK(d.rfind("web.yml:0", 0) != 0);  // a position, not the whole file
}

TEST_CASE("web config: unknown keys, with did you mean", "[web_config]") {
  std::vector<Diag> diags;
  web_config_parse("basic_auth_user:\n  prom: x\n", "web.yml", ".", diags);
  CHECK(only(diags) == "web.yml:1:1: unknown key 'basic_auth_user' in the web configuration (did you mean "
                       "'basic_auth_users'?)");
  diags.clear();
  web_config_parse("tls_server_config:\n  cert_file: a\n  key_file: b\n  cert_fiel: c\n", "web.yml", "/nonexistent",
                   diags);
  REQUIRE(diags.size() == 3);  // a and b unreadable, then the typo
  CHECK(diag_format(diags[2]) ==
        "web.yml:4:3: unknown key 'cert_fiel' in tls_server_config (did you mean 'cert_file'?)");
}

TEST_CASE("web config: a missing certificate file, a missing key, a key that is no key, a CA that is none, a hash that is not bcrypt", "[web_config]") {
  TempDir d;
  std::vector<Diag> diags;
  web_config_parse("tls_server_config:\n  cert_file: nope.pem\n  key_file: key.pem\n", "web.yml", d.path, diags);
  CHECK(only(diags) == "web.yml:2:14: cert_file: cannot read '" + d.path + "/nope.pem' (No such file or directory)");
  diags.clear();
  web_config_parse("tls_server_config:\n  cert_file: cert.pem\n", "web.yml", d.path, diags);
  CHECK(only(diags) == "web.yml:2:3: tls_server_config needs cert_file and key_file");
  diags.clear();
  web_config_parse("tls_server_config:\n  cert_file: cert.pem\n  key_file: junk.pem\n", "web.yml", d.path, diags);
  CHECK(only(diags).rfind("web.yml:3:13: cert_file and key_file: ", 0) == 0);  // GnuTLS's reason follows
  diags.clear();
  web_config_parse("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_auth_type: "
                   "RequireAndVerifyClientCert\n  client_ca_file: junk.pem\n",
                   "web.yml", d.path, diags);
  CHECK(only(diags) == "web.yml:5:19: client_ca_file: no certificate in it");
  diags.clear();
  web_config_parse("basic_auth_users:\n  prom: plaintext\n", "web.yml", d.path, diags);
  CHECK(only(diags).rfind("web.yml:2:9: the password of 'prom' must be a bcrypt hash", 0) == 0);
  diags.clear();
  web_config_load(d.path + "/absent.yml", diags);
  CHECK(only(diags) == d.path + "/absent.yml: cannot read the web configuration (No such file or directory)");
}

TEST_CASE("bcrypt_check: $2b$ and $2y$ hashes, wrong passwords, non-bcrypt hashes", "[web_config]") {
  CHECK(bcrypt_check("s3cret", kHash2b));
  CHECK(bcrypt_check("s3cret", kHash2y));
  CHECK_FALSE(bcrypt_check("s3cret!", kHash2b));
  CHECK_FALSE(bcrypt_check("", kHash2y));
  CHECK_FALSE(bcrypt_check("s3cret", "s3cret"));
  CHECK_FALSE(bcrypt_check("x", "$1$abc$def"));  // md5-crypt: refused, not checked
}

TEST_CASE("serve: bad options and a bad web config are usage errors, before listening", "[web_config]") {
  TempDir d;
  CHECK(serve_rc({"--max-requests", "many"}) == kExitUsage);
  CHECK(serve_rc({"--max-per-address", "-1"}) == kExitUsage);
  CHECK(serve_rc({"--web-config"}) == kExitUsage);
  CHECK(serve_rc({"--listen", "127.0.0.1:1", "--web-config", d.path + "/absent.yml"}) == kExitUsage);
  std::ofstream(d.path + "/bad.yml") << "tls_server_config: {cert_file: cert.pem}\n";
  CHECK(serve_rc({"--listen", "127.0.0.1:1", "--web-config", d.path + "/bad.yml"}) == kExitUsage);
  std::remove((d.path + "/bad.yml").c_str());
}
