#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Makes the golden images of tests/golden/ with a build of the release they stand for
# (README.md): a service with limits and counters from real processes, the host segment
# of shares, a fleet service. Usage: tests/golden/make.sh BUILD_DIR OUT_DIR
# (BUILD_DIR holds that release's bonsaictl and libbonsai.so; run as the user the tests
# run as: the tests rewrite the uid in the headers anyway).
set -eu
build=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)
export BONSAI_SHM_PREFIX=golden$$.
ctl=$build/bonsaictl
work=$(mktemp -d)
trap 'rm -rf "$work" /dev/shm/$BONSAI_SHM_PREFIX*' EXIT
cat > "$work/golden.yaml" <<YAML
version: 1
host:
  capacity:
    - calls: [writes]
      rate: 16MiB/s
services:
  web:
    scope: service
    limits:
      - calls: [writes]
        rate: 8MiB/s
        ceil: 16MiB/s
      - calls: [reads]
        rate: 32MiB/s
  up:
    scope: service
    limits:
      - calls: [writes]
        rate: 2MiB/s
  fleet:
    fleet:
      store: redis://127.0.0.1:1
      period: 100ms
    limits:
      - calls: [writes]
        rate: 4MiB/s
YAML
"$ctl" load "$work/golden.yaml"
# Counters from real processes: three dd of 1 MiB each under the service (exited totals).
for i in 1 2 3; do
  env LD_PRELOAD="$build/libbonsai.so" BONSAI_SERVICE=web dd if=/dev/zero of=/dev/null bs=64k count=16 status=none
done
env LD_PRELOAD="$build/libbonsai.so" BONSAI_SERVICE=fleet dd if=/dev/zero of=/dev/null bs=64k count=8 status=none
# The fleet agent `load` started finds no store (port 1): stop it, its segment stays.
pid=$("$ctl" stat fleet --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["fleet"]["agent_pid"])' 2>/dev/null || true)
[ -n "$pid" ] && [ "$pid" != 0 ] && kill "$pid" 2>/dev/null || true
"$ctl" stat web > "$out/web.stat.txt"
uid=$(id -u)
for f in web up fleet; do zstd -q -19 -f "/dev/shm/${BONSAI_SHM_PREFIX}bonsai.$uid.$f" -o "$out/$f.seg.zst"; done
zstd -q -19 -f "/dev/shm/${BONSAI_SHM_PREFIX}bonsai-host.$uid" -o "$out/host.seg.zst"
ls -l "$out"
