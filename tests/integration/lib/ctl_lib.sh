# SPDX-License-Identifier: MIT
# Helpers shared by the ctl and shm tests (sourced, not run): the
# bonsaictl binary, reading `bonsaictl stat --json`, the segment's file name.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CTL=$BONSAI_BUILD/bonsaictl
[ -x "$CTL" ] || fail "no $CTL (build first)"
seg_file() { echo "/dev/shm/${BONSAI_SHM_PREFIX}bonsai.$(id -u).$1"; }
cleanup_hooks+=('for f in /dev/shm/${BONSAI_SHM_PREFIX}bonsai.*; do [ -e "$f" ] && rm -f "$f"; done')
# The fleet agent's lock directory (bonsaictl/fleet/fleet_publish.h).
cleanup_hooks+=('rm -rf /dev/shm/${BONSAI_SHM_PREFIX}bonsai-fleet.*')

# jq_stat SERVICE EXPR: evaluates the Python expression EXPR on the service's stat
# document `d` (e.g. 'd["total"]["calls"]["write"]["bytes"]'); missing keys give 0.
jq_stat() {
  "$CTL" stat "$1" --json 2>/dev/null | python3 -c '
import json, sys
try:
    d = json.loads(sys.stdin.readline())
    print(eval(sys.argv[1]))
except (KeyError, IndexError, ValueError):
    print(0)' "$2"
}

# total_bytes SERVICE CALL: bytes moved by CALL in the whole service so far.
total_bytes() { jq_stat "$1" "d['total']['calls']['$2']['bytes']"; }

# sample SERVICE CALL: "NS BYTES" now (time taken just before reading the counters).
sample() { local t; t=$(now_ns); echo "$t $(total_bytes "$1" "$2")"; }

# rate_between "NS1 B1" "NS2 B2": bytes per second between two samples.
rate_between() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); printf "%.0f", (y[2] - x[2]) / ((y[1] - x[1]) / 1e9) }'; }

# wait_attached SERVICE N: waits (up to ATTACH_SECS, default 5 s) until N processes are attached.
wait_attached() {
  local i secs=${ATTACH_SECS:-5}
  for i in $(seq 1 $((secs * 20))); do
    [ "$(jq_stat "$1" 'len(d["processes"])')" -ge "$2" ] && return 0
    sleep 0.05
  done
  fail "service $1: fewer than $2 processes attached after $secs s"
}

# protect_agent_of SERVICE: prints the pid of the protect-agent serving SERVICE, waiting up
# to 5 s for one (0 if none came).
protect_agent_of() {
  local pid=0
  for _ in $(seq 1 50); do
    pid=$(jq_stat "$1" 'd["protect"]["controller_pid"]')
    [ "$pid" != 0 ] && break
    sleep 0.1
  done
  echo "$pid"
}

# go_build_gocat OUT CGO LDFLAGS: builds lib/go/gocat.go into OUT (with CGO_ENABLED=CGO
# and -ldflags=LDFLAGS when given) when missing or older than its source. False (the log
# in $T/gobuild.log) when go is absent or cannot build it.
go_build_gocat() {
  local out=$1 cgo=$2 ldflags=$3 src=$TLIB/go
  command -v go > /dev/null || { echo "go not installed" > "$T/gobuild.log"; return 1; }
  [ -x "$out" ] && [ "$out" -nt "$src/gocat.go" ] && return 0
  mkdir -p "$BONSAI_BUILD/go"
  (cd "$src" && CGO_ENABLED=$cgo GOCACHE="$BONSAI_BUILD/go/cache" GOPATH="$BONSAI_BUILD/go/path" GO111MODULE=off \
    go build ${ldflags:+-ldflags="$ldflags"} -o "$out" gocat.go) > "$T/gobuild.log" 2>&1
}

# build_gocat: $BONSAI_BUILD/go/gocat, a static Go copy program (lib/go/gocat.go); sets
# GOCAT. False when it cannot be built: the caller skips its Go case. Each test that runs
# gocat builds it here, none relies on another having run first.
build_gocat() {
  GOCAT=$BONSAI_BUILD/go/gocat
  go_build_gocat "$GOCAT" 0 ""
}

# build_gocat_dyn: the same program linked to libc (cgo, external linker) and without
# Go's build-id note (-buildid=): a dynamic Go program only its sections (.go.buildinfo)
# tell apart; sets GOCAT_DYN. False as build_gocat.
build_gocat_dyn() {
  GOCAT_DYN=$BONSAI_BUILD/go/gocat_dyn
  go_build_gocat "$GOCAT_DYN" 1 "-linkmode=external -buildid=" && file -L "$GOCAT_DYN" | grep -q "dynamically linked"
}

# Can this kernel run the 32-bit ABI from a 64-bit program (`int $0x80`)? A kernel built
# without IA32 emulation, or booted with ia32_emulation=0, kills such a call with
# SIGSEGV: the tests of the 32-bit ABI then have nothing to hold.
have_ia32() {
  "$PRE/strict_probe" int80 "$T/ia32.probe" 1 > /dev/null 2>&1
}
