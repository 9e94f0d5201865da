# SPDX-License-Identifier: MIT
# Event-loop servers under a cap (issue #35), shared by t_eventloop_*.sh (sourced, not
# run). el_case SERVER starts the real server
# (tests/scenarios/eventloop_servers.sh, the servers bench/scenarios/streaming.sh measures) in a service
# scope under `writes=1MB/s:fd=socket`, 10 clients each reading a large file at their own
# 250 KB/s for 5 s (tests/scenarios/paced_clients.py; demand 2.5x the cap), and 3 requests for a
# 1 KiB file during the run. It checks, with tolerances for a loaded 2-core machine (the
# issue's tight targets are bench/scenarios/streaming.sh's): every client received something (a
# tenth of its fair share: 50 KB; some got 512 bytes and no more from today's Go server), the
# aggregate lies within [0.6, 1.15] x the cap, the server's writes as `bonsaictl stat`
# counted them are at most 1.15 x the cap (an overrun the paced clients cannot take in sits
# in socket buffers), every 1 KiB request answered within 2 s.
. "$(dirname "${BASH_SOURCE[0]}")/ctl_lib.sh"
EL_ROOT=$(cd "$TLIB/../../.." && pwd)
. "$EL_ROOT/tests/scenarios/eventloop_servers.sh"
EL_N=10 EL_RATE=250000 EL_CAP=1MB EL_CAP_B=1000000 EL_SECS=5
# The Go server is built once into the build tree (a cold `go build` takes ~30 s).
EL_BIN=$BONSAI_BUILD/scenarios/bin

el_case() {
  local server=$1 port url py
  need_cmd curl python3
  el_have "$server" || skip "$server not installed"
  if [ "$server" = go ]; then el_build_go "$EL_BIN" || fail "cannot build tests/scenarios/go/fileserver"; fi
  el_files "$T/www" 64
  port=$(free_port)
  url=http://127.0.0.1:$port
  el_start "$server" "$port" "$T/www" "$T/srv" "$EL_BIN" \
    "$CTL" run -s el --scope service -l "writes=$EL_CAP/s:fd=socket" --
  cleanup_hooks+=("el_stop $EL_PID")
  el_wait "$url/small" 15 || { tail -5 "$T/srv/$server.log" >&2; fail "$server did not answer within 15 s"; }
  py=$(el_python)
  "$py" "$EL_ROOT/tests/scenarios/paced_clients.py" 127.0.0.1 "$port" /big "$EL_N" "$EL_RATE" "$EL_SECS" >"$T/clients" 2>"$T/clients.err" &
  local cl=$! i waits=()
  "$CTL" stat el --json >"$T/stat.a" 2>/dev/null
  for i in 1 2 3; do  # at 1.5, 2.5 and 3.5 s, each on its own
    if [ "$i" = 1 ]; then sleep 1.5; else sleep 1; fi
    { t=$(curl -s -o /dev/null --max-time 2 -w '%{time_total} %{http_code}' "$url/small"); echo "$t $?" >>"$T/probes"; } &
    waits+=($!)
  done
  wait "$cl"  # (not the server: it is a job of this shell too)
  "$CTL" stat el --json >"$T/stat.b" 2>/dev/null
  wait "${waits[@]}"
  el_stop "$EL_PID"
  [ -s "$T/clients.err" ] && cat "$T/clients.err" >&2
  python3 - "$T/clients" "$T/probes" "$EL_N" "$EL_CAP_B" "$EL_SECS" "$T/stat.a" "$T/stat.b" >"$T/verdict" <<'PY' || true
import json, sys
clients, probes, n, cap, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
def written(path):  # (ns, bytes of the service's write-side calls) from `bonsaictl stat --json`
    try:
        d = json.loads(open(path).readline())
    except (OSError, ValueError):
        return None
    words = ('write', 'send', 'splice', 'copy_file_range', 'tee', 'put')
    return d['time_unix_ns'], sum(v['bytes'] for k, v in d['total']['calls'].items() if any(w in k for w in words))
a, b = written(sys.argv[6]), written(sys.argv[7])
server = (b[1] - a[1]) / ((b[0] - a[0]) / 1e9) if a and b and b[0] > a[0] else None
got = [int(l.split()[0].split('=')[1]) for l in open(clients) if l.startswith('bytes=')]
agg = sum(got) / secs
print('note: %d clients: %s bytes each (fair share %.0f); aggregate %.0f B/s = %.3f x cap'
      % (len(got), ' '.join(str(b) for b in sorted(got)), cap / n * secs, agg, agg / cap))
lat = []
for l in open(probes):
    f = l.split()
    ok = len(f) == 3 and f[1] == '200' and f[2] == '0'
    lat.append(('%.0f ms' % (float(f[0]) * 1e3)) if ok else 'no answer within 2 s')
print('note: 1 KiB requests during the run: ' + ', '.join(lat))
print('note: the server wrote %s by bonsaictl stat' % ('%.0f B/s = %.3f x cap' % (server, server / cap) if server is not None else '? (no stat)'))
if len(got) != n:
    print('fail: %d client results, not %d' % (len(got), n))
# "Something": a tenth of the fair share (a few hundred bytes in 5 s is starved too).
starved = sum(1 for b in got if b < 0.1 * cap / n * secs)
if starved:
    print('fail: %d of %d clients received less than a tenth of their fair share (the server is held inside capped calls: issue #35)' % (starved, n))
if agg > 1.15 * cap:
    print('fail: aggregate %.3f x cap, above 1.15 (the cap does not hold)' % (agg / cap))
if server is not None and server > 1.15 * cap:
    print('fail: the server wrote %.3f x cap by bonsaictl stat, above 1.15 (the cap does not hold)' % (server / cap))
if agg < 0.6 * cap:
    print('fail: aggregate %.3f x cap, below 0.6 (the cap is not used)' % (agg / cap))
bad = sum(1 for x in lat if not x.endswith(' ms'))
if len(lat) != 3 or bad:
    print('fail: %d of 3 1 KiB requests did not answer within 2 s' % (bad + 3 - len(lat)))
PY
  sed -n 's/^note: /  /p' "$T/verdict" >&2
  if grep -q '^fail: ' "$T/verdict"; then
    fail "$server under writes=$EL_CAP/s:fd=socket: $(sed -n 's/^fail: //p' "$T/verdict" | paste -sd ';' | sed 's/;/; /g')"
  fi
  note "$server: every client served, the cap held, small requests answered"
}
