#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# N HTTP clients, each reading one large file at its own pace (a token bucket: RATE bytes/s,
# depth 64 KiB, starting empty, reads of 16 KiB or more) for SECS seconds, all started at one instant, in one
# asyncio process (issue #35: bench/scenarios/streaming.sh, tests/integration/t_eventloop_*.sh).
# Prints one line per client: "bytes=BODY_BYTES first_byte_ms=MS status=HTTP_STATUS|error".
#
# Why not `curl --limit-rate`: curl 7.88 (Debian 12) reads whatever the socket holds before
# it starts pacing: against a fast loopback server a client "at 250k" took 10 MB in its first
# 0.5 s and then nothing for 40 s, so uncapped streams and any below a cap ran in bursts.
#
#   paced_clients.py HOST PORT PATH N RATE_BPS SECS
import asyncio, sys, time

DEPTH = 65536
CHUNK = 16384


async def client(host, port, path, rate, t0, deadline, out):
    got, first, status = 0, None, 'error'
    writer = None
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port),
                                                max(0.1, deadline - time.monotonic()))
        writer.write(b'GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' % (path.encode(), host.encode()))
        head = await asyncio.wait_for(reader.readuntil(b'\r\n\r\n'), max(0.1, deadline - time.monotonic()))
        first = time.monotonic() - t0
        status = head.split(b' ', 2)[1].decode()
        tokens, last = 0.0, time.monotonic()  # empty: no head start over RATE x time
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            tokens = min(DEPTH, tokens + (now - last) * rate)
            last = now
            if tokens < CHUNK:
                await asyncio.sleep(min((CHUNK - tokens) / rate, deadline - now))
                continue
            data = await asyncio.wait_for(reader.read(int(tokens)), deadline - now)
            if not data:
                break
            got += len(data)
            tokens -= len(data)
    except (asyncio.TimeoutError, OSError, asyncio.IncompleteReadError, IndexError):
        pass
    finally:
        if writer is not None:
            writer.close()
    out.append((got, first, status))


async def main():
    host, port, path, n, rate, secs = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), \
        float(sys.argv[5]), float(sys.argv[6])
    t0 = time.monotonic()
    out = []
    await asyncio.gather(*(client(host, port, path, rate, t0, t0 + secs, out) for _ in range(n)))
    for got, first, status in out:
        print('bytes=%d first_byte_ms=%s status=%s' % (got, '%.1f' % (first * 1e3) if first is not None else 'nan', status))


asyncio.run(main())
