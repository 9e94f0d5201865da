#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# curl downloads 6 MiB from python3 http.server on 127.0.0.1, once under a recv cap and
# once under an fwrite cap (curl writes the body with fwrite): 3 MiB/s each, data exact.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_cmd curl python3
mkdir "$T/www"
make_data "$T/www/body" 6
port=$(free_port)
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$T/www" > "$T/server.log" 2>&1 &
server=$!
cleanup_hooks+=("kill $server")
for _ in $(seq 50); do
  curl -s -o /dev/null "http://127.0.0.1:$port/" && break
  sleep 0.1
done
url=http://127.0.0.1:$port/body
timed recv limited 'recv=3MiB/s' "$T/recv.json" curl -s -f -o "$T/recv.out" "$url"
timed fwrite limited 'fwrite=3MiB/s' "$T/fwrite.json" curl -s -f -o "$T/fwrite.out" "$url"
wait "$(jobs -p | grep -vx "$server")" 2>/dev/null
while [ ! -f "$T/recv.rc" ] || [ ! -f "$T/fwrite.rc" ]; do sleep 0.1; done

check_rate "curl under recv cap" $((6 * MiB)) "$(timed_ok recv)" $((3 * MiB)) 0.75 1.10
same_data "$T/www/body" "$T/recv.out"
[ "$(stats_sum "$T/recv.json" bytes recv)" -ge $((6 * MiB)) ] || fail "curl: recv bytes not counted"

check_rate "curl under fwrite cap" $((6 * MiB)) "$(timed_ok fwrite)" $((3 * MiB)) 0.75 1.10
same_data "$T/www/body" "$T/fwrite.out"
[ "$(stats_sum "$T/fwrite.json" bytes fwrite)" -eq $((6 * MiB)) ] || fail "curl: fwrite bytes not counted"
