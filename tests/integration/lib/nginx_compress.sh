# SPDX-License-Identifier: MIT
# Sourced after lib.sh by the compressed event-loop tests (t_compress_eventloop_*):
# nginx_compress MIB LIMITS: nginx with one worker (epoll, `sendfile on`) serving $T/www/big
# (MIB MiB of changelog text) and $T/www/small (its first 1 KiB) on a free 127.0.0.1 port,
# preloaded with BONSAI_COMPRESS_TO its clients and BONSAI_LIMITS=LIMITS; waits until a
# preloaded curl gets `small` back exact. Sets port, url, RX (the preloaded, decoding client's
# env prefix) and NGX (nginx's pid, stopped at cleanup). Skips where there is too little text.
nginx_compress() {
  local mib=$1 limits=$2
  changelog_text "$T/text" "$mib"
  [ "$(stat -c %s "$T/text")" -ge $((mib * MiB)) ] || skip "not enough changelog text on this machine"
  mkdir -p "$T/www" "$T/ngx"
  mv "$T/text" "$T/www/big"
  head -c 1024 "$T/www/big" > "$T/www/small"
  port=$(free_port)
  cat > "$T/ngx/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
user $(id -un) $(id -gn);
pid $T/ngx/nginx.pid;
error_log $T/ngx/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $T/ngx; proxy_temp_path $T/ngx; fastcgi_temp_path $T/ngx;
  uwsgi_temp_path $T/ngx; scgi_temp_path $T/ngx;
  default_type application/octet-stream;
  sendfile on;
  server { listen 127.0.0.1:$port; root $T/www; }
}
CONF
  env LD_PRELOAD="$PRELOAD" "BONSAI_COMPRESS_TO=127.0.0.1:*" "BONSAI_LIMITS=$limits" \
    nginx -p "$T/ngx" -e "$T/ngx/error.log" -c "$T/ngx/nginx.conf" > "$T/nginx.log" 2>&1 &
  NGX=$!
  cleanup_hooks+=("kill $NGX; wait $NGX")
  RX=(env LD_PRELOAD="$PRELOAD" BONSAI_COMPRESS_ACCEPT=1)
  url=http://127.0.0.1:$port
  for _ in $(seq 100); do
    "${RX[@]}" curl -s -o /dev/null --max-time 1 "$url/small" && break
    sleep 0.1
  done
  "${RX[@]}" curl -s -f -o "$T/small.out" --max-time 5 "$url/small" || { cat "$T/ngx/error.log" >&2; fail "nginx does not answer"; }
  same_data "$T/www/small" "$T/small.out"
}
