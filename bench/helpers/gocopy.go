// SPDX-License-Identifier: MIT
// gocopy: a Go program for the supervised-mode benchmark (bench/scenarios/supervised.sh). Go makes
// its own system calls, so LD_PRELOAD never reaches it; `bonsaictl run` supervises it.
//
//	gocopy copy SRC DST        io.Copy between two files (copy_file_range underneath)
//	gocopy tcp HOST:PORT       writes 64 KiB pieces to a TCP connection until it breaks
//
// Prints "bytes=N secs=S".
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 4 && !(len(os.Args) == 3 && os.Args[1] == "tcp") {
		fmt.Fprintln(os.Stderr, "usage: gocopy copy SRC DST | gocopy tcp HOST:PORT")
		os.Exit(2)
	}
	start := time.Now()
	var n int64
	var err error
	switch os.Args[1] {
	case "copy":
		src, e := os.Open(os.Args[2])
		if e != nil {
			panic(e)
		}
		dst, e := os.Create(os.Args[3])
		if e != nil {
			panic(e)
		}
		n, err = io.Copy(dst, src)
		dst.Close()
	case "tcp":
		conn, e := net.Dial("tcp", os.Args[2])
		if e != nil {
			panic(e)
		}
		buf := make([]byte, 64<<10)
		for {
			w, e := conn.Write(buf)
			n += int64(w)
			if e != nil {
				break // the receiver stopped measuring
			}
		}
	}
	if err != nil {
		panic(err)
	}
	fmt.Printf("bytes=%d secs=%.4f\n", n, time.Since(start).Seconds())
}
