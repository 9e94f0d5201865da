#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# timeout: 50
# Issue #35 (event-loop servers under a cap): a static Go net/http.FileServer
# (tests/scenarios/go/fileserver, CGO_ENABLED=0: supervised by `bonsaictl run`; sendfile on
# non-blocking sockets from many goroutines) in a service scope under writes=1MB/s:fd=socket, 10 clients at 250 KB/s for 5 s
# (eventloop_lib.sh): every client gets a tenth of its fair share or more, the aggregate
# stays within [0.6, 1.15] x the cap (the server's writes by bonsaictl stat <= 1.15 x), 1 KiB
# requests during the run answer within 2 s. Skipped when the server is missing.
. "$(dirname "$0")/lib/eventloop_lib.sh"
el_case go
