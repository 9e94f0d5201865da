#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The figures of one streaming run (issue #35), from paced_clients.py's lines and the
# prober's lines ("TIME_TOTAL_S HTTP_CODE CURL_EXIT" per 1 KiB request):
#   streaming_stats.py CLIENTS_FILE PROBES_FILE CAP_BPS CLIENT_BPS SECS [PROBE_TIMEOUT_S [STAT_A STAT_B [compressed]]]
# STAT_A, STAT_B: `bonsaictl stat SERVICE --json` at the clients' start and end: the server's
# writes as bonsai counted them (server_bps, server_ratio against the cap; "-" without),
# which shows an overrun the paced clients cannot take in (it fills socket buffers).
# CAP_BPS 0: uncapped. Prints one line of key=value:
#   n agg_bps want_bps ratio (aggregate / min(cap, N x client rate)) jain min_bps max_bps
#   mean_bps fair_bps (min(client rate, cap / N)) min_fair (slowest / fair) starved (clients
#   with no byte) probes probe_fail (not 200 in time) p50_ms p99_ms max_ms (nearest rank;
#   a failed probe counts as the timeout) verdict (PASS/FAIL on the targets when
#   capped: aggregate within 1% of the cap, Jain >= 0.99, slowest >= 0.9 x fair, p99 <= 50 ms
#   and no failed probe; "ref" uncapped).
# `compressed` (issue 53: the server compresses to its clients, BONSAI_COMPRESS_TO): the cap
# holds the wire, so the clients' (decoded) aggregate is no longer bounded by it: ratio is
# aggregate / min(cap, N x client rate) as before (above 1: what compression gained), the
# fair share is min(client rate, aggregate / N), server_bps counts the server's wire bytes,
# and the verdict asks the wire within [0.9, 1.01] x the cap, Jain >= 0.99, slowest >= 0.9 x
# fair, every 1 KiB request within 100 ms (the bar) and none failed.
import json, math, sys

clients_file, probes_file = sys.argv[1], sys.argv[2]
cap, client_bps, secs = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
probe_timeout = float(sys.argv[6]) if len(sys.argv) > 6 else 5.0
compressed = len(sys.argv) > 9 and sys.argv[9] == 'compressed'

rates = []
for line in open(clients_file):
    kv = dict(f.split('=', 1) for f in line.split() if '=' in f)
    if 'bytes' in kv:
        rates.append(int(kv['bytes']) / secs)
n = len(rates)
agg = sum(rates)
want = n * client_bps if cap <= 0 else min(cap, n * client_bps)
fair = client_bps if cap <= 0 else min(client_bps, cap / n if n else 0)
if compressed:
    fair = min(client_bps, agg / n if n else 0)
sq = sum(r * r for r in rates)
jain = agg * agg / (n * sq) if n and sq > 0 else 0.0
lat = []
fails = 0
try:
    for line in open(probes_file):
        f = line.split()
        if len(f) < 3:
            continue
        t, code, rc = float(f[0]), f[1], f[2]
        if code != '200' or rc != '0':
            fails += 1
            t = max(t, probe_timeout)
        lat.append(t * 1e3)
except FileNotFoundError:
    pass
lat.sort()

WRITE_WORDS = ('write', 'send', 'splice', 'copy_file_range', 'tee', 'put')


def written(path):
    try:
        d = json.loads(open(path).readline())
    except (OSError, ValueError):
        return None
    calls = d['total']['calls']
    key = lambda v: v.get('wire_bytes', v['bytes']) if compressed else v['bytes']  # compressed: the wire's
    return d['time_unix_ns'], sum(key(v) for k, v in calls.items() if any(w in k for w in WRITE_WORDS))


server_bps, server_ratio = '-', '-'
if len(sys.argv) > 8:
    a, b = written(sys.argv[7]), written(sys.argv[8])
    if a and b and b[0] > a[0]:
        bps = (b[1] - a[1]) / ((b[0] - a[0]) / 1e9)
        server_bps, server_ratio = '%.0f' % bps, ('%.4f' % (bps / cap) if cap > 0 else '-')


def rank(p):
    return lat[max(0, math.ceil(p * len(lat)) - 1)] if lat else float('nan')


out = dict(n=n, agg_bps='%.0f' % agg, want_bps='%.0f' % want, ratio='%.4f' % (agg / want if want else 0),
           jain='%.4f' % jain, min_bps='%.0f' % (min(rates) if rates else 0),
           max_bps='%.0f' % (max(rates) if rates else 0), mean_bps='%.0f' % (agg / n if n else 0),
           fair_bps='%.0f' % fair, min_fair='%.3f' % (min(rates) / fair if rates and fair else 0),
           starved=sum(1 for r in rates if r == 0), probes=len(lat), probe_fail=fails,
           server_bps=server_bps, server_ratio=server_ratio, p50_ms='%.1f' % rank(0.5), p99_ms='%.1f' % rank(0.99), max_ms='%.1f' % (lat[-1] if lat else float('nan')))
if cap <= 0:
    out['verdict'] = 'ref'
elif compressed:
    wire_ok = server_ratio != '-' and 0.9 <= float(server_ratio) <= 1.01
    ok = (wire_ok and jain >= 0.99 and rates and min(rates) >= 0.9 * fair and lat and lat[-1] <= 100 and fails == 0)
    out['verdict'] = 'PASS' if ok else 'FAIL'
else:
    ok = (abs(agg / want - 1) <= 0.01 and jain >= 0.99 and rates and min(rates) >= 0.9 * fair
          and lat and rank(0.99) <= 50 and fails == 0)
    out['verdict'] = 'PASS' if ok else 'FAIL'
print(' '.join('%s=%s' % kv for kv in out.items()))
