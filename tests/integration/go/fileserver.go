// SPDX-License-Identifier: MIT
// fileserver: a static Go HTTP file server for the supervised-mode tests
// (t_sv_go_sendfile.sh). net/http.FileServer sends files with sendfile(2) of up to
// 4 MiB a call on non-blocking sockets, from as many threads as goroutines are in
// system calls: the load of issue 35 that the supervisor must hold to its cap.
//
//	fileserver DIR PORTFILE    serves DIR on 127.0.0.1 (a free port, written to PORTFILE)
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: fileserver DIR PORTFILE")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	tmp := os.Args[2] + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%d\n", port)), 0o644); err != nil || os.Rename(tmp, os.Args[2]) != nil {
		fmt.Fprintln(os.Stderr, "cannot write the port file")
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, http.Serve(ln, http.FileServer(http.Dir(os.Args[1]))))
	os.Exit(1)
}
