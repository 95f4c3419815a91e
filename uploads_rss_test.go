package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// uploadRSSTarget is issue 16's bound: a 25 MiB upload raises the
// server's peak resident memory by less than this over idle.
const uploadRSSTarget = 8 << 10 // KiB

// rssServer is the real binary serving a fresh database, for measuring
// its memory from /proc.
type rssServer struct {
	cmd          *exec.Cmd
	baseURL      string
	email, key   string
	stdoutClosed chan struct{}
}

func startRSSServer(tb testing.TB) *rssServer {
	tb.Helper()
	if _, err := os.Stat("/proc/self/status"); err != nil {
		tb.Skipf("no /proc: %v", err)
	}
	dir := tb.TempDir()
	bin := e2eBuildBinary(tb)
	// No quotas: a long benchmark keeps 51 MiB more on each round.
	cmd := exec.Command(bin, "serve", "--db", filepath.Join(dir, "z.db"), "--addr", "127.0.0.1:0", "--rate-limit", "off", "--upload-quota-mib", "0", "--upload-total-mib", "0")
	cmd.Env = e2eChildEnv()
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	s := &rssServer{cmd: cmd, stdoutClosed: make(chan struct{})}
	tb.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	found := make(chan string, 2)
	go func() {
		defer close(s.stdoutClosed)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "email: "); ok {
				found <- "email " + v
			} else if v, ok := strings.CutPrefix(sc.Text(), "key: "); ok {
				found <- "key " + v
			}
		}
	}()
	listening := regexp.MustCompile(`msg=listening addr=(127\.0\.0\.1:\d+)`)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	deadline := time.After(20 * time.Second)
	for s.email == "" || s.key == "" || s.baseURL == "" {
		select {
		case v := <-found:
			kind, value, _ := strings.Cut(v, " ")
			if kind == "email" {
				s.email = value
			} else {
				s.key = value
			}
		case a := <-addr:
			s.baseURL = "http://" + a
		case <-deadline:
			tb.Fatalf("the server did not start")
		}
	}
	return s
}

// procKiB reads a field of /proc/PID/status, in KiB.
func procKiB(tb testing.TB, pid int, field string) int {
	tb.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kib, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				tb.Fatal(err)
			}
			return kib
		}
	}
	tb.Skipf("no %s in /proc/PID/status", field)
	return 0
}

// uploadStreaming posts size bytes as one file, generated as they are
// sent, so that the client holds none of it either.
func (s *rssServer) uploadStreaming(tb testing.TB, size int64) {
	tb.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("file", "big.bin")
		if err == nil {
			chunk := []byte(strings.Repeat("0123456789abcdef", 4096))
			for sent := int64(0); sent < size && err == nil; sent += int64(len(chunk)) {
				n := min(int64(len(chunk)), size-sent)
				_, err = part.Write(chunk[:n])
			}
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest(http.MethodPost, s.baseURL+"/api/v1/user_uploads", pr)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.SetBasicAuth(s.email, s.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var answer map[string]any
	json.NewDecoder(resp.Body).Decode(&answer)
	if resp.StatusCode != 200 {
		tb.Fatalf("upload: got %d %v", resp.StatusCode, answer)
	}
}

// measureUploadPeak answers the server's resident memory at idle and its
// peak (VmHWM, reset first through clear_refs) during a 25 MiB upload.
func measureUploadPeak(tb testing.TB, s *rssServer) (idle, peak int) {
	tb.Helper()
	pid := s.cmd.Process.Pid
	s.uploadStreaming(tb, 1<<20) // warm up the upload path
	time.Sleep(200 * time.Millisecond)
	idle = procKiB(tb, pid, "VmRSS")
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		tb.Skipf("cannot reset the peak: %v", err)
	}
	s.uploadStreaming(tb, 25<<20)
	peak = procKiB(tb, pid, "VmHWM")
	return idle, peak
}

// TestUpload_25MiBPeakRSSThroughTheBinary: a 25 MiB upload streams to
// disk; the server's resident memory peaks less than 8 MiB above idle.
func TestUpload_25MiBPeakRSSThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	s := startRSSServer(t)
	idle, peak := measureUploadPeak(t, s)
	t.Logf("25 MiB upload: idle VmRSS %d KiB, peak VmHWM %d KiB, %+d KiB over idle", idle, peak, peak-idle)
	if peak-idle > uploadRSSTarget {
		t.Errorf("a 25 MiB upload raised peak RSS by %d KiB over idle, want under %d KiB", peak-idle, uploadRSSTarget)
	}
}

// BenchmarkUpload25MiB uploads 25 MiB to the real binary and reports the
// server's peak RSS over idle (from /proc of the child) and the time:
//
//	go test -run XXX -bench Upload25MiB -benchtime 5x
func BenchmarkUpload25MiB(b *testing.B) {
	s := startRSSServer(b)
	worst := 0
	for b.Loop() {
		b.StopTimer()
		idle, peak := measureUploadPeak(b, s)
		worst = max(worst, peak-idle)
		b.StartTimer()
		s.uploadStreaming(b, 25<<20)
	}
	b.SetBytes(25 << 20)
	b.ReportMetric(float64(worst)/1024, "peak-MiB-over-idle")
}
