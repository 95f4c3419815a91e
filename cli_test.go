package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// runCLI runs the whole program in-process, as main would.
func runCLI(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	getenv := func(k string) string { return env[k] }
	err = run(context.Background(), args, getenv, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), err
}

// mustRunCLI is runCLI for a command the test needs to succeed: it
// answers stdout, and a failure stops the test.
func mustRunCLI(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	out, stderr, err := runCLI(t, env, args...)
	if err != nil {
		t.Fatalf("%q: %v\n%s", args, err, stderr)
	}
	return out
}

var apiKeyLine = regexp.MustCompile(`^[A-Za-z0-9]{32}\n$`)

func TestRun_FlagsMayStandAnywhere(t *testing.T) {
	db := filepath.Join(t.TempDir(), "z.db")
	for _, args := range [][]string{
		{"--db", db, "user", "add", "a@example.com", "--name", "A"},
		{"user", "add", "--name", "B", "b@example.com", "--db", db, "--admin"},
		{"user", "--db=" + db, "add", "c@example.com", "--bot"},
	} {
		out, _, err := runCLI(t, nil, args...)
		if err != nil || !apiKeyLine.MatchString(out) {
			t.Errorf("%q: got %q, %v; want a key alone on a line", args, out, err)
		}
	}
	out, _, err := runCLI(t, nil, "user", "list", "--db", db)
	want := "1\ta@example.com\tmember\tactive\n2\tb@example.com\tadmin\tactive\n3\tc@example.com\tbot\tactive\n"
	if err != nil || out != want {
		t.Errorf("user list: got %q, %v; want %q", out, err, want)
	}
}

func TestRun_DatabaseFromEnvironmentFlagWins(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"ZULITE_DB": filepath.Join(dir, "env.db")}
	if _, _, err := runCLI(t, env, "channel", "add", "general", "--description", "talk"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, env, "channel", "add", "secret", "--private", "--db", filepath.Join(dir, "flag.db")); err != nil {
		t.Fatal(err)
	}
	out := mustRunCLI(t, env, "channel", "list")
	if out != "1\tgeneral\tpublic\ttalk\n" {
		t.Errorf("channels in ZULITE_DB: got %q, want general only", out)
	}
	out = mustRunCLI(t, env, "channel", "list", "--db", filepath.Join(dir, "flag.db"))
	if out != "1\tsecret\tprivate\t\n" {
		t.Errorf("channels in --db: got %q, want secret only", out)
	}
}

func TestRun_UserLifecycle(t *testing.T) {
	db := filepath.Join(t.TempDir(), "z.db")
	first := mustRunCLI(t, nil, "--db", db, "user", "add", "Alice@Example.com")
	second, _, err := runCLI(t, nil, "--db", db, "user", "key", "alice@example.com")
	if err != nil || !apiKeyLine.MatchString(second) || second == first {
		t.Errorf("user key: got %v, want a new key alone on a line", err)
	}
	for _, c := range []struct{ cmd, want string }{
		{"deactivate", "deactivated"},
		{"reactivate", "active"},
	} {
		if _, _, err := runCLI(t, nil, "--db", db, "user", c.cmd, "ALICE@example.com"); err != nil {
			t.Fatalf("user %s: %v", c.cmd, err)
		}
		out := mustRunCLI(t, nil, "--db", db, "user", "list")
		if want := "1\tAlice@Example.com\tmember\t" + c.want + "\n"; out != want {
			t.Errorf("after %s: got %q, want %q", c.cmd, out, want)
		}
	}
}

func TestRun_MistakesAreErrorsNotPanics(t *testing.T) {
	db := filepath.Join(t.TempDir(), "z.db")
	mustRunCLI(t, nil, "--db", db, "user", "add", "a@example.com")
	for _, c := range []struct {
		args  []string
		usage bool
	}{
		{[]string{"frobnicate"}, true},
		{[]string{"user"}, true},
		{[]string{"user", "add"}, true},
		{[]string{"user", "add", "a@example.com", "extra"}, true},
		{[]string{"user", "list", "--admin"}, true},
		{[]string{"user", "add", "not-an-email"}, false},
		{[]string{"user", "add", "A@example.com"}, false},
		{[]string{"user", "key", "nobody@example.com"}, false},
		{[]string{"channel", "add", strings.Repeat("x", 61)}, false},
	} {
		_, _, err := runCLI(t, nil, append(c.args, "--db", db)...)
		if err == nil || errors.Is(err, errUsage) != c.usage {
			t.Errorf("%q: got %v, want an error (usage: %v)", c.args, err, c.usage)
		}
	}
	if out := mustRunCLI(t, nil, "--db", db, "user", "list"); strings.Count(out, "\n") != 1 {
		t.Errorf("accounts after refused commands: got %q, want one", out)
	}
}

func TestRun_HeldDatabaseFailsWithinAboutASecond(t *testing.T) {
	db := filepath.Join(t.TempDir(), "z.db")
	holder, err := bbolt.Open(db, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	start := time.Now()
	_, _, err = runCLI(t, nil, "--db", db, "user", "list")
	if !errors.Is(err, errDatabaseLocked) || !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("got %v, want a database-in-use error", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("waited %v, want about a second", waited)
	}
}

// "zulite" with flags and no command serves (SPEC §2); a second serve on
// the database it holds fails within about a second, saying so.
func TestRun_NoCommandServesAndASecondServeFailsFast(t *testing.T) {
	db := filepath.Join(t.TempDir(), "z.db")
	_, stderr, _ := startRun(t, nil, []string{"--addr", "127.0.0.1:0", "--db", db})
	base := "http://" + addrFrom(t, stderr, "msg=listening")
	if code, body, _ := get(t, http.DefaultClient, base+"/api/v1/server_settings", "", ""); code != 200 {
		t.Fatalf("server_settings from a bare zulite: got %d %s", code, body)
	}
	start := time.Now()
	_, _, err := runCLI(t, nil, "serve", "--db", db, "--addr", "127.0.0.1:0")
	if !errors.Is(err, errDatabaseLocked) || !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("second serve: got %v, want a database-in-use error", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("second serve waited %v, want about a second", waited)
	}
}

func TestRun_Version(t *testing.T) {
	out, _, err := runCLI(t, nil, "version")
	if err != nil || !strings.Contains(out, "feature level 278") {
		t.Errorf("version: got %q, %v", out, err)
	}
}

// syncBuffer is a bytes.Buffer that a server goroutine may write while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe runs "zulite serve" in-process on 127.0.0.1 until the test
// ends, with extra flags and environment.
func startServe(t *testing.T, db string, env map[string]string, extra ...string) (stdout, stderr *syncBuffer, stop func() error) {
	t.Helper()
	return startRun(t, env, append([]string{"serve", "--db", db, "--addr", "127.0.0.1:0"}, extra...))
}

// startRun runs zulite in-process with args until it logs that it
// listens, and stops it when the test ends.
func startRun(t *testing.T, env map[string]string, args []string) (stdout, stderr *syncBuffer, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, func(k string) string { return env[k] }, strings.NewReader(""), stdout, stderr)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "msg=listening") && !strings.Contains(stderr.String(), `"msg":"listening"`) {
		select {
		case err := <-done:
			t.Fatalf("serve ended before listening: %v\n%s", err, stderr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %s", stderr)
		}
	}
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { stop() })
	return stdout, stderr, stop
}

func TestServe_BootstrapsOnceAndAdministersThroughTheSocket(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "z.db")
	stdout, _, stop := startServe(t, db, nil)
	key := regexp.MustCompile(`key: ([A-Za-z0-9]{32})\n`).FindStringSubmatch(stdout.String())
	if key == nil || !strings.Contains(stdout.String(), "email: owner@zulite.localhost\n") {
		t.Fatalf("bootstrap output: got %d bytes without an e-mail and key", len(stdout.String()))
	}
	rc, err := os.ReadFile(filepath.Join(dir, "zuliprc"))
	if err != nil || !strings.HasPrefix(string(rc), "[api]\nemail=owner@zulite.localhost\nkey="+key[1]+"\nsite=http://127.0.0.1:") {
		t.Errorf("zuliprc: got %v, want [api] with the printed e-mail, key and site", err)
	}
	for _, path := range []string{filepath.Join(dir, "zuliprc"), db, socketPath(db)} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: got %v, %v; want mode 600", filepath.Base(path), fi.Mode().Perm(), err)
		}
	}

	// The server holds the file: this goes through the socket.
	out, _, err := runCLI(t, nil, "user", "add", "alice@example.com", "--db", db)
	if err != nil || !apiKeyLine.MatchString(out) {
		t.Fatalf("user add while serving: got %v", err)
	}
	if _, _, err := runCLI(t, nil, "user", "add", "ALICE@example.com", "--db", db); err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("duplicate user add through the socket: got %v, want an already-in-use error", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("serve after cancel: %v", err)
	}
	if _, err := os.Stat(socketPath(db)); !os.IsNotExist(err) {
		t.Errorf("socket after shutdown: got %v, want it removed", err)
	}

	// Second start: accounts exist, so no new owner and no key printed.
	// The public URL loses its trailing slash; the realm name comes from
	// the environment.
	stdout, stderr, _ := startServe(t, db, map[string]string{"ZULITE_REALM_NAME": "Acme"}, "--url", "https://chat.example.com/")
	if stdout.String() != "" {
		t.Errorf("second start printed %d bytes, want nothing", len(stdout.String()))
	}
	addr := regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`).FindStringSubmatch(stderr.String())
	resp, err := http.Get("http://" + addr[1] + "/api/v1/server_settings")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var settings map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&settings); err != nil {
		t.Fatalf("server_settings: %v", err)
	}
	if settings["realm_url"] != "https://chat.example.com" || settings["realm_uri"] != "https://chat.example.com" || settings["realm_name"] != "Acme" {
		t.Errorf("server_settings: got realm_url %v, realm_uri %v, realm_name %v; want https://chat.example.com twice and Acme",
			settings["realm_url"], settings["realm_uri"], settings["realm_name"])
	}
	out = mustRunCLI(t, nil, "user", "list", "--db", db)
	if strings.Count(out, "\n") != 2 {
		t.Errorf("accounts: got %q, want the owner and alice", out)
	}
}

func TestBackup_WhileServingThenRestore(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "z.db")
	_, _, stop := startServe(t, db, nil)
	for _, args := range [][]string{
		{"user", "add", "alice@example.com"},
		{"channel", "add", "general", "--private"},
	} {
		if _, _, err := runCLI(t, nil, append(args, "--db", db)...); err != nil {
			t.Fatal(err)
		}
	}
	backup := filepath.Join(dir, "copy.db")
	out, _, err := runCLI(t, nil, "backup", backup, "--db", db) // through the socket: serve holds the file
	if err != nil || strings.TrimSpace(out) != backup {
		t.Fatalf("backup while serving: got %q, %v", out, err)
	}
	if fi, err := os.Stat(backup); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("backup file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	mustRunCLI(t, nil, "user", "add", "bob@example.com", "--db", db) // after the backup: not in it
	if _, _, err := runCLI(t, nil, "backup", db, "--db", db); err == nil || !strings.Contains(err.Error(), "database itself") {
		t.Errorf("a backup over the live database: got %v, want a refusal", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// With no server, the command copies the file itself.
	direct := filepath.Join(dir, "direct.db")
	if _, _, err := runCLI(t, nil, "backup", direct, "--db", db); err != nil {
		t.Fatalf("backup with no server: %v", err)
	}
	if d, err := openStore(direct, time.Second); err != nil {
		t.Errorf("the direct backup does not open: %v", err)
	} else {
		if users, err := d.users(); err != nil || len(users) != 3 {
			t.Errorf("direct backup: got %d users (%v), want 3", len(users), err)
		}
		d.close()
	}

	// Restore: copy the backup over the database while no server runs.
	data, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, data, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	checkConsistency(t, st.db)
	users, err := st.users()
	if err != nil {
		t.Fatal(err)
	}
	channels, err := st.channels()
	if err != nil {
		t.Fatal(err)
	}
	var emails []string
	for _, u := range users {
		emails = append(emails, u.Email)
	}
	if strings.Join(emails, ",") != "owner@zulite.localhost,alice@example.com" || len(channels) != 1 || !channels[0].Private {
		t.Errorf("restored: users %v, channels %+v; want the owner, alice and the private channel", emails, channels)
	}
}
