#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A container cannot change what the other services of its user get (docs/reference/shares.md,
# docs/reference/containers.md): services a (4 MiB/s, ceil 16) and b (8 MiB/s, ceil 16) share a
# capacity of 16 MiB/s; a writer of each runs on the host. A container of service a
# (Podman with a's device) then zeroes, in a loop and without the library, the state in
# every file it can write under /dev/shm: the host segment's clocks (if the device mounts
# it) read idle again and again; a's segment's slots and counters too. The two
# writers together stay within 1.05x the capacity and b keeps its 8 MiB/s. Then the
# container's own dd under a runs at a's rate, 4 MiB/s: without the host segment a rule
# with a ceil is held to its guaranteed rate (not unlimited), and `stat` says so.
# Scope process: under scope service a's buckets are in a's segment, its container's to
# rewrite, and lifting its own service's cap is the documented limit (docs/reference/containers.md).
# timeout: 120
# parallel: no (rates within 5%)
. "$(dirname "$0")/lib/cdi_lib.sh"
cleanup_hooks+=('rm -f /dev/shm/${BONSAI_SHM_PREFIX}bonsai-host.*')

A=$(svc a) B=$(svc b)
load_yaml "version: 1
host:
  capacity:
    - calls: [writes]
      rate: 16MiB/s
services:
  $A:
    limits:
      - calls: [writes]
        rate: 4MiB/s
        ceil: 16MiB/s
  $B:
    limits:
      - calls: [writes]
        rate: 8MiB/s
        ceil: 16MiB/s"
gen_spec
glibc_root bookworm

# The writers on the host, attached before the container starts rewriting.
env LD_PRELOAD="$LIB" BONSAI_SERVICE="$A" dd if=/dev/zero of=/dev/null bs=64k 2> "$T/a.err" &
da=$!
env LD_PRELOAD="$LIB" BONSAI_SERVICE="$B" dd if=/dev/zero of=/dev/null bs=64k 2> "$T/b.err" &
db=$!
cleanup_hooks+=("kill $da $db 2>/dev/null")
wait_attached "$A" 1
wait_attached "$B" 1

# The tenant, for at most 40 s, without the library (perl's own calls): every file it
# can write under /dev/shm, zeroed in a loop past its first 4 KiB (a segment's header and
# limits: the files stay valid, so every process keeps using them), and the host
# segment's bucket clocks (its last 4 KiB, 64 rules of 64 bytes), which then read idle:
# spare capacity for every borrower. The small files every pass, the big one (a's
# segment: its slots and counters) once; a line every 1000 passes.
cat > "$T/tenant.pl" <<'PL'
my @f = grep { -f $_ && -w $_ } glob("/dev/shm/*");
print "$_\n" for @f;
my ($end, $pass) = (time + 40, 0);
$| = 1;
while (time < $end) {
  for my $f (@f) {
    my $n = -s $f;
    next if $n > 65536 && $pass;
    my $at = $f =~ /bonsai-host\./ ? $n - 4096 : 4096;
    open(my $h, "+<", $f) or next;
    sysseek($h, $at, 0);
    for (my $left = $n - $at; $left > 0; $left -= 1048576) { syswrite($h, "\0" x ($left > 1048576 ? 1048576 : $left)); }
    close $h;
  }
  print "pass $pass\n" if ++$pass % 1000 == 0;
}
PL
cp "$T/tenant.pl" "$ROOT/tmp/${BONSAI_SHM_PREFIX}tenant.pl" || fail "cp tenant.pl"
cleanup_hooks+=("rm -f '$ROOT/tmp/${BONSAI_SHM_PREFIX}tenant.pl'")
crun "$A" "$ROOT" sh -c "unset LD_PRELOAD; exec perl /tmp/${BONSAI_SHM_PREFIX}tenant.pl"
att=$CID
for i in $(seq 1 40); do podman logs "$att" 2> /dev/null | grep -q '^pass' && break; sleep 0.2; done
podman logs "$att" 2>&1 | grep -q '^pass' || fail "the tenant made no pass: $(podman logs "$att" 2>&1 | tail -n3)"
note "the tenant rewrites: $(podman logs "$att" 2>/dev/null | grep -v '^pass' | paste -sd' ')"

# bytes PID FILE: what dd PID has copied so far (it prints it on SIGUSR1).
bytes() {
  local n0 i
  n0=$(grep -c 'copied' "$2")
  kill -USR1 "$1"
  for i in $(seq 1 50); do [ "$(grep -c 'copied' "$2")" -gt "$n0" ] && break; sleep 0.02; done
  grep 'copied' "$2" | tail -n1 | awk '{print $1}'
}
sleep 0.5
t0=$(now_ns); a0=$(bytes $da "$T/a.err"); b0=$(bytes $db "$T/b.err")
sleep 4
t1=$(now_ns); a1=$(bytes $da "$T/a.err"); b1=$(bytes $db "$T/b.err")
ra=$(awk -v x="$a0" -v y="$a1" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.0f", (y - x) / ((e - s) / 1e9) }')
rb=$(awk -v x="$b0" -v y="$b1" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.0f", (y - x) / ((e - s) / 1e9) }')
passes=$(podman logs "$att" 2> /dev/null | grep '^pass' | tail -n1 | cut -d' ' -f2)
note "while the tenant rewrote ($passes passes): a $(awk -v r="$ra" 'BEGIN{printf "%.2f", r/1048576}') MiB/s, b $(awk -v r="$rb" 'BEGIN{printf "%.2f", r/1048576}') MiB/s"
check_rate "a and b together, against the capacity" $((ra + rb)) 1 $((16 * MiB)) 0.75 1.05
check_rate "b, against its guaranteed 8 MiB/s" "$rb" 1 $((8 * MiB)) 0.95 2.05
kill $da $db 2> /dev/null
wait $da $db 2> /dev/null
podman kill "$att" > /dev/null 2>&1

# The container's own writer under a: its rule has a ceil and no host segment to borrow
# from: held to a's 4 MiB/s, said by stat, not on stderr.
crun "$A" "$ROOT" dd if=/dev/zero of=/dev/null bs=64k count=128
for i in $(seq 1 100); do
  "$CTL" stat "$A" > "$T/stat.out" 2>&1 || fail "stat: $(cat "$T/stat.out")"
  grep -q 'no host capacity: its rates, no borrowing' "$T/stat.out" && break
  sleep 0.1
done
grep -q 'no host capacity: its rates, no borrowing' "$T/stat.out" || fail "stat does not say it: $(cat "$T/stat.out")"
rc=$(cwait "$CID")
[ "$rc" = 0 ] || fail "the container's dd: exit $rc: $(cat "$T/$CID.log")"
secs=$(sed -n 's/.* copied, \([0-9.]*\) s,.*/\1/p' "$T/$CID.log")  # dd's own time
check_rate "the container's dd under a (8 MiB), at a's rate" $((8 * MiB)) "$secs" $((4 * MiB)) 0.75 1.10
grep -q 'bonsai' "$T/$CID.log" && fail "the container's dd said: $(cat "$T/$CID.log")"
note "stat: $(grep 'no host capacity' "$T/stat.out")"
exit 0
