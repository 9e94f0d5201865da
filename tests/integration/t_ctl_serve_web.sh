#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `bonsaictl serve --web-config FILE` (#36), Prometheus' exporter-toolkit format:
# basic auth with a bcrypt hash made by htpasswd (right password 200, wrong or none 401
# with WWW-Authenticate, 429 beyond 5 password checks a second), TLS with a self-signed certificate made here by openssl (curl
# --cacert 200, plain HTTP refused), a client certificate required
# (RequireAndVerifyClientCert), and a bad file rejected with FILE:LINE:COL, exit 2,
# nothing listening.
# timeout: 30
# parallel: no (20 wrong passwords must land within a second to meet the bcrypt budget: the 20 curls start at once)
# The hash has bcrypt's least cost (4, ~1 ms a check): at cost 10 (~70 ms idle, several
# hundred ms on a loaded machine) checks made one after another take as long as the budget
# refills, and the budget is never passed (that is what it is for).
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd curl openssl htpasswd

hash=$(htpasswd -nbB -C 4 prom s3cret | cut -d: -f2)
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$T/key.pem" -out "$T/cert.pem" 2> /dev/null || fail "openssl could not make a certificate"

# serve_with WEB_CONFIG: starts serve with it on a free port; sets $port and $serve_pid.
serve_with() {
  port=$(free_port)
  "$CTL" serve --listen "127.0.0.1:$port" --web-config "$1" 2> "$T/serve.err" &
  serve_pid=$!
  cleanup_hooks+=("kill $serve_pid 2>/dev/null")
  for _ in $(seq 1 50); do grep -q 'metrics on' "$T/serve.err" && return 0; sleep 0.1; done
  fail "serve did not start: $(cat "$T/serve.err")"
}
stop_serve() { kill "$serve_pid"; wait "$serve_pid" || fail "serve did not stop cleanly"; }
code() { curl -s -o /dev/null -m 10 -w '%{http_code}' "$@"; }

# (a) basic auth over plain HTTP
printf 'basic_auth_users:\n  prom: %s\n' "$hash" > "$T/auth.yml"
serve_with "$T/auth.yml"
url=http://127.0.0.1:$port/metrics
[ "$(code -u prom:s3cret "$url")" = 200 ] || fail "right password: not 200"
[ "$(code -u prom:wrong "$url")" = 401 ] || fail "wrong password: not 401"
[ "$(code -u nobody:s3cret "$url")" = 401 ] || fail "unknown user: not 401"
[ "$(code "$url")" = 401 ] || fail "no credentials: not 401"
curl -s -D - -o /dev/null "$url" | grep -qi '^WWW-Authenticate: Basic realm="bonsai"' ||
  fail "a 401 without WWW-Authenticate: Basic"
# Wrong passwords in a loop get 429 beyond 5 bcrypt checks a second; the password that
# matched before is remembered and still answers at once.
# All at once (20 curls started together): one after another they would need a loaded
# machine to start 5 curls a second to meet the budget.
curls=()
for i in $(seq 1 20); do (code -u "prom:wrong$i" "$url"; echo) > "$T/wrong.$i" & curls+=($!); done
wait "${curls[@]}"
cat "$T"/wrong.[0-9]* > "$T/wrong.codes"
grep -qx 429 "$T/wrong.codes" || fail "20 wrong passwords at once: no 429 ($(sort "$T/wrong.codes" | uniq -c | tr -s ' \n' ' '))"
grep -qvx -e 401 -e 429 "$T/wrong.codes" && fail "wrong passwords: $(sort "$T/wrong.codes" | uniq -c | tr -s ' \n' ' ')"
[ "$(code -u prom:s3cret "$url")" = 200 ] || fail "right password after the wrong ones: not 200"
stop_serve

# (b) TLS (relative paths: from the configuration's directory) and basic auth
printf 'tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  prom: %s\n' "$hash" \
  > "$T/tls.yml"
serve_with "$T/tls.yml"
c=$(code --cacert "$T/cert.pem" -u prom:s3cret "https://127.0.0.1:$port/metrics")
[ "$c" = 200 ] || fail "https with the right password: $c, not 200 ($(tail -n 3 "$T/serve.err" 2>/dev/null))"
[ "$(code --cacert "$T/cert.pem" "https://127.0.0.1:$port/metrics")" = 401 ] || fail "https without credentials: not 401"
[ "$(code -u prom:s3cret "http://127.0.0.1:$port/metrics")" = 200 ] && fail "plain http answered on a TLS port"
[ "$(code -u prom:s3cret "https://127.0.0.1:$port/metrics")" = 200 ] && fail "curl trusted a self-signed cert unasked"
stop_serve

# (c) a client certificate signed by client_ca_file is required
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=client -keyout "$T/ckey.pem" -out "$T/ccert.pem" \
  2> /dev/null || fail "openssl could not make a client certificate"
printf 'tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ccert.pem\n' \
  > "$T/mtls.yml"
serve_with "$T/mtls.yml"
url=https://127.0.0.1:$port/metrics
c=$(curl -sS -o /dev/null -m 10 -w '%{http_code}' --cacert "$T/cert.pem" --cert "$T/ccert.pem" --key "$T/ckey.pem" "$url" 2> "$T/mtls.curl")
[ "$c" = 200 ] || fail "with the client certificate: $c, not 200 (curl: $(cat "$T/mtls.curl"); serve: $(tail -n 3 "$T/serve.err"))"
[ "$(code --cacert "$T/cert.pem" "$url")" = 200 ] && fail "without a client certificate: 200"
[ "$(code --cacert "$T/cert.pem" --cert "$T/cert.pem" --key "$T/key.pem" "$url")" = 200 ] &&
  fail "with a certificate client_ca_file did not sign: 200"
stop_serve

# (d) a bad file: FILE:LINE:COL, exit 2, nothing started
printf 'tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  cert_fiel: x\n' > "$T/bad.yml"
port=$(free_port)
"$CTL" serve --listen "127.0.0.1:$port" --web-config "$T/bad.yml" 2> "$T/bad.err"
rc=$?
[ "$rc" = 2 ] || fail "a bad web config: exit $rc, not 2"
grep -qF "$T/bad.yml:4:3: unknown key 'cert_fiel' in tls_server_config (did you mean 'cert_file'?)" "$T/bad.err" ||
  fail "no FILE:LINE:COL diagnostic: $(cat "$T/bad.err")"
printf 'basic_auth_users: [\n' > "$T/bad2.yml"
"$CTL" serve --listen "127.0.0.1:$port" --web-config "$T/bad2.yml" 2> "$T/bad2.err"
rc=$?
[ "$rc" = 2 ] && grep -q "^$T/bad2.yml:[0-9]*:[0-9]*: " "$T/bad2.err" || fail "bad YAML: exit $rc, $(cat "$T/bad2.err")"
