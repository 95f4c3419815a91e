package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Issue 11: what an ordinary account, a local user or a careless setup
// could still do to a running server. Each test runs the real binary.

// The admin socket is never reachable with a looser mode than 0600, even
// under umask 000: a watcher that looks at it from the moment it exists
// sees 0600 every time. (Binding, then chmod-ing, left a window in which
// another local user could connect and mint an API key.)
func TestAdminSocket_PrivateFromItsFirstMoment(t *testing.T) {
	bin := e2eBuildBinary(t)
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	for start := range 8 {
		db := filepath.Join(t.TempDir(), "z.db")
		sock := socketPath(db)
		var firstMode atomic.Uint32
		done := make(chan struct{})
		go func() {
			defer close(done)
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				if fi, err := os.Lstat(sock); err == nil {
					firstMode.Store(uint32(fi.Mode().Perm()) | 1<<31)
					return
				}
			}
		}()
		srv := e2eStartServer(t, bin, db)
		<-done
		if err := srv.stop(); err != nil {
			t.Fatalf("start %d: stop: %v", start, err)
		}
		seen := firstMode.Load()
		if seen == 0 {
			t.Fatalf("start %d: the socket never appeared", start)
		}
		if mode := os.FileMode(seen &^ (1 << 31)); mode != 0o600 {
			t.Fatalf("start %d: the socket was first seen with mode %v, want 600", start, mode)
		}
	}
}

// A socket made reachable by a careless chmod still answers only its
// owner: another user's admin command is refused by the server, which
// checks the peer's uid (SO_PEERCRED). Needs root, to run as nobody.
func TestAdminSocket_AnotherUserIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a command as another user")
	}
	bin := e2eBuildBinary(t)
	dir, err := os.MkdirTemp("", "zulite-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(dir, "zulite")
	if err := copyFile(bin, shared, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "z.db")
	srv := e2eStartServer(t, bin, db)
	defer srv.stop()
	if err := os.Chmod(socketPath(db), 0o666); err != nil { // the careless setup
		t.Fatal(err)
	}
	cmd := exec.Command(shared, "user", "key", "owner@zulite.localhost", "--db", db)
	cmd.Env = e2eChildEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("user key as nobody: got success (output withheld: it holds a key), want a refusal")
	}
	if !strings.Contains(string(out), "refused: the admin socket answers only its owner") {
		t.Fatalf("user key as nobody: got %v, %q; want the refusal", err, firstLine(string(out)))
	}
	// The owner is still served.
	r := e2eRunCLI(t, bin, "user", "list", "--db", db)
	r.wantOK(t, "user list as the owner")
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// firstLine is at most the first line of a command's output, so that a
// failure message never carries a key printed after it.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
