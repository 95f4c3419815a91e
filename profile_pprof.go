//go:build pprof

package main

// A build for profiling, never the release: `go build -tags pprof` serves
// net/http/pprof on ZULITE_PPROF's address (e.g. 127.0.0.1:6060), beside
// the server, so a day of bench/load can be profiled on the real binary.
// The release build has no such listener and none of its code.

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if addr := os.Getenv("ZULITE_PPROF"); addr != "" {
		go http.ListenAndServe(addr, nil)
	}
}
