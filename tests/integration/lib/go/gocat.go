// SPDX-License-Identifier: MIT
// gocat SRC [DST]: a Go program (it makes its own system calls: LD_PRELOAD cannot reach
// it) that copies SRC to DST (io.Copy), or reads SRC to its end in 64 KiB reads when no
// DST is given; prints "bytes=N secs=S" (issue #40: a Go child of a service process).
// DST "-" or "-at": SRC's bytes to stdout, read in 64 KiB Read (read) or ReadAt (pread)
// calls, the line to stderr (issue 52: protected reads the supervisor makes).
package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	src, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	start := time.Now()
	var n int64
	if len(os.Args) > 2 && (os.Args[2] == "-" || os.Args[2] == "-at") {
		buf := make([]byte, 65536)
		for {
			var m int
			var e error
			if os.Args[2] == "-at" {
				m, e = src.ReadAt(buf, n)
			} else {
				m, e = src.Read(buf)
			}
			if m > 0 {
				if _, we := os.Stdout.Write(buf[:m]); we != nil {
					fmt.Fprintln(os.Stderr, we)
					os.Exit(1)
				}
			}
			n += int64(m)
			if e == io.EOF {
				break
			}
			if e != nil {
				fmt.Fprintln(os.Stderr, e)
				os.Exit(1)
			}
		}
		fmt.Fprintf(os.Stderr, "bytes=%d secs=%.4f\n", n, time.Since(start).Seconds())
		return
	}
	if len(os.Args) > 2 {
		dst, err := os.Create(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		n, err = io.Copy(dst, src)
		dst.Close()
	} else {
		buf := make([]byte, 65536)
		for {
			m, e := src.Read(buf)
			n += int64(m)
			if e != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("bytes=%d secs=%.4f\n", n, time.Since(start).Seconds())
}
