package main

// The ceilings: minimal net/http servers the load measures zulite
// against, started as this command with -serve.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
)

func serveCeiling(h http.Handler) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	return http.Serve(ln, h)
}

const envelope = `{"result":"success","msg":""}` + "\n"

// plainCeiling checks a Basic header and answers a fixed envelope.
func plainCeiling() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); !ok {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, envelope)
	})
}

// writeCeiling commits one key per request, concurrent requests sharing a
// synced transaction (one committer, the same scheme as zulite's).
func writeCeiling(path string) (http.Handler, error) {
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		return nil, err
	}
	type write struct {
		key  []byte
		done chan error
	}
	writes := make(chan write, 256)
	// Its commit groups, in the samples zulite's /metrics has, so that
	// the table shows both the same way.
	var commits, written, nanos atomic.Int64
	go func() {
		for first := range writes {
			group := []write{first}
		gather:
			for len(group) < 256 {
				select {
				case w := <-writes:
					group = append(group, w)
				default:
					break gather
				}
			}
			start := time.Now()
			err := db.Update(func(tx *bbolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte("k"))
				for _, w := range group {
					if err == nil {
						err = b.Put(w.key, []byte("v"))
					}
				}
				return err
			})
			commits.Add(1)
			written.Add(int64(len(group)))
			nanos.Add(int64(time.Since(start)))
			for _, w := range group {
				w.done <- err
			}
		}
	}()
	var n atomic.Uint64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); !ok {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/metrics" {
			stats := db.Stats()
			fmt.Fprintf(w, "zulite_commit_group_writes_count %d\nzulite_commit_group_writes_sum %d\nzulite_commit_duration_seconds_sum %g\nzulite_database_pages_written_total %d\n",
				commits.Load(), written.Load(), time.Duration(nanos.Load()).Seconds(), stats.TxStats.GetPageCount())
			return
		}
		io.Copy(io.Discard, r.Body)
		done := make(chan error, 1)
		writes <- write{[]byte(strconv.FormatUint(n.Add(1), 10)), done}
		if err := <-done; err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, envelope)
	}), nil
}

// startCeiling runs this program again as a ceiling server.
func startCeiling(mode, dir string) (*process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-serve", mode, "-db", filepath.Join(dir, "ceiling.db"))
	// The ceilings collect garbage as zulite does by default (GOGC=200,
	// main.go), so that the comparison is of the code, not of a setting.
	cmd.Env = append(os.Environ(), "GOGC=200")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("%s ceiling: %w", mode, err)
	}
	return &process{cmd, strings.TrimSpace(line)}, nil
}
