// SPDX-License-Identifier: MIT
// fileserver: a static Go file server for the event-loop experiment (issue #35,
// bench/scenarios/streaming.sh, tests/integration/t_eventloop_go.sh). net/http.FileServer sends a
// file with sendfile on a non-blocking socket from many goroutines over Go's netpoll, the
// case the supervisor has to hold to a cap. Built with CGO_ENABLED=0 (static), so
// `bonsaictl run` supervises it.
//
//	fileserver ADDR ROOT       serves ROOT on ADDR (e.g. 127.0.0.1:8080) until killed
package main

import (
	"fmt"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: fileserver ADDR ROOT")
		os.Exit(2)
	}
	err := http.ListenAndServe(os.Args[1], http.FileServer(http.Dir(os.Args[2])))
	fmt.Fprintln(os.Stderr, "fileserver:", err)
	os.Exit(1)
}
