package main

import (
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"go.etcd.io/bbolt"
)

// setFileSizeLimit sets the soft RLIMIT_FSIZE of a running process
// (prlimit(2)); 0 lifts it. The hard limit stays unlimited, so lifting
// needs no privilege.
func setFileSizeLimit(t *testing.T, pid int, bytes uint64) {
	t.Helper()
	limit := syscall.Rlimit{Cur: bytes, Max: ^uint64(0)}
	if bytes == 0 {
		limit.Cur = ^uint64(0)
	}
	const rlimitFsize = 1
	if _, _, errno := syscall.Syscall6(syscall.SYS_PRLIMIT64, uintptr(pid), rlimitFsize, uintptr(unsafe.Pointer(&limit)), 0, 0, 0); errno != 0 {
		t.Skipf("prlimit: %v (needs the same user or CAP_SYS_RESOURCE)", errno)
	}
}

// TestDiskFull_500ThenRecovers fills the "disk" (a file-size limit, with
// SIGXFSZ ignored so that writes fail with EFBIG instead of killing the
// process): writes get the 500 envelope, the server stays up, and once
// space returns writes succeed and the file is consistent.
func TestDiskFull_500ThenRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash to start the server with SIGXFSZ ignored")
	}
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	// bash ignores SIGXFSZ and execs the server, which keeps it ignored.
	wrapper := filepath.Join(t.TempDir(), "zulite-noxfsz")
	if err := writeExecutable(wrapper, "#!/bin/bash\ntrap '' XFSZ\nexec "+bin+" \"$@\"\n"); err != nil {
		t.Fatal(err)
	}
	srv := e2eStartServer(t, wrapper, db, "--rate-limit", "off")
	key := srv.ownerKey
	c := rtClient{srv.baseURL, "owner@zulite.localhost", key, &http.Client{Timeout: 10 * time.Second}}
	c.mustCall(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"general"}]`}}, http.StatusOK)

	setFileSizeLimit(t, srv.cmd.Process.Pid, 512<<10) // 512 KiB of "disk"
	big := strings.Repeat("x", 9000)
	sent, full := 0, false
	var acked []uint64 // ids of every acknowledged send
	for i := 0; i < 500 && !full; i++ {
		code, body := c.call(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {big}})
		switch code {
		case 200:
			sent++
			acked = append(acked, uint64(body["id"].(float64)))
		case 500:
			full = true
			if len(body) != 2 || body["result"] != "error" || body["msg"] != "Internal server error" {
				t.Errorf("disk full: got %v, want the bare 500 envelope", body)
			}
		default:
			t.Fatalf("send %d: got %d %v", i, code, body)
		}
	}
	if !full {
		t.Fatalf("%d sends of 9 KB fitted in 512 KiB: the limit did not bite", sent)
	}
	if code, _ := c.call(t, http.MethodGet, "/api/v1/users/me", nil); code != 200 {
		t.Errorf("reads while the disk is full: got %d, want 200", code)
	}
	for range 10 { // still full: a write fails with 500 or, if it happens to fit in freed pages, succeeds
		code, body := c.call(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {big}})
		if code == 200 {
			sent++
			acked = append(acked, uint64(body["id"].(float64)))
		} else if code != 500 {
			t.Errorf("a write while still full: got %d %v, want 500 or 200", code, body)
		}
	}

	setFileSizeLimit(t, srv.cmd.Process.Pid, 0) // space returns
	for i := range 5 {
		code, body := c.call(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {big}})
		if code != 200 {
			t.Fatalf("send %d after space returned: got %d %v", i, code, body)
		}
		acked = append(acked, uint64(body["id"].(float64)))
	}
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Wait(); err != nil {
		t.Errorf("exit: %v", err)
	}
	st := reopenChecked(t, db)
	mustView(t, st, func(tx *bbolt.Tx) error {
		for _, id := range acked {
			if m, err := messageByID(tx, id); err != nil || len(m.Content) != len(big) {
				t.Errorf("acknowledged message %d: %v", id, err)
			}
		}
		return nil
	})
	t.Logf("%d sends fitted before the disk filled; writes recovered after", sent)
}

func writeExecutable(path, content string) error {
	return os.WriteFile(path, []byte(content), 0o755)
}
