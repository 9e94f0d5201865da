#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Shares (issue 38) on files, pipes and sockets (blocking, and non-blocking in a select loop): two services in one namespace under one
# 16 MiB/s capacity, a guaranteed 4 and 8 MiB/s, ceilings at the capacity. A alone takes
# the capacity (work conserving); with B busy too, each keeps its rate and together they
# stay within the capacity. (Tolerances for a busy 2-core machine; bench/ measures tight.)
# timeout: 80
. "$(dirname "$0")/lib/shares_lib.sh"
shares_yaml 16 4 8
sink
for kind in file pipe socket nbsocket; do
  note "--- $kind"
  writer a "$kind"; pa=$!
  wait_attached a 1
  sleep 0.3
  ra=$(rate_over a 1.2)
  ratio "$kind: A alone / capacity" "$ra" "$CAP" 0.80 1.10
  writer b "$kind"; pb=$!
  wait_attached b 1
  sleep 0.4
  set -- $(rates_over 1.5)
  ratio "$kind: A with B busy / its rate" "$1" "$RATE_A" 0.90 3.2
  ratio "$kind: B with A busy / its rate" "$2" "$RATE_B" 0.90 1.6
  ratio "$kind: A + B / capacity" "$(($1 + $2))" "$CAP" 0.80 1.12
  stop_writer $pa; stop_writer $pb
  for s in a b; do
    for i in $(seq 1 100); do [ "$(jq_stat $s 'len(d["processes"])')" = 0 ] && break; sleep 0.05; done
  done
done
borrowed=$(jq_stat a 'd["shares"][0]["borrowed_bytes"]')
[ "$borrowed" -gt $((4 * MiB)) ] || fail "A borrowed only $borrowed bytes"
lent=$(jq_stat a 'd["shares"][0]["host_lent_bytes"]')
[ "$lent" -ge "$borrowed" ] || fail "the host lent $lent < what A borrowed ($borrowed)"
exit 0
