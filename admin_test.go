package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

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
