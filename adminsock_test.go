package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

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
	json.NewDecoder(resp.Body).Decode(&settings)
	if settings["realm_url"] != "https://chat.example.com" || settings["realm_uri"] != "https://chat.example.com" || settings["realm_name"] != "Acme" {
		t.Errorf("server_settings: got realm_url %v, realm_uri %v, realm_name %v; want https://chat.example.com twice and Acme",
			settings["realm_url"], settings["realm_uri"], settings["realm_name"])
	}
	out, _, _ = runCLI(t, nil, "user", "list", "--db", db)
	if strings.Count(out, "\n") != 2 {
		t.Errorf("accounts: got %q, want the owner and alice", out)
	}
}
