package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCompat_ZulipJS runs compat/story.js, the SPEC §1 story told by the
// official client zulip-js (pinned in compat/package.json), against the
// real binary. Without node and npm it skips, saying how to install them;
// under CI=true it fails instead.
func TestCompat_ZulipJS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and installs zulip-js; skipped with -short")
	}
	t.Parallel() // independent of the other tests: its own store or server
	needTools(t, "install Node.js and npm (Debian: apt-get install -y nodejs npm) to run the zulip-js suite", "node", "npm")
	compat, err := filepath.Abs("compat")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("node", "-e", "process.exit(parseInt(process.versions.node) >= 16 ? 0 : 1)").CombinedOutput(); err != nil {
		t.Fatalf("Node.js 16 or newer is needed for compat/ (node --version: %s)", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	npm := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	npm.Dir = compat
	if out, err := npm.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in compat/: %v\n%s", err, out)
	}

	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	srv := e2eStartServer(t, bin, db)
	accounts := map[string]string{"alice@example.com": "alice-password-1", "bob@example.com": "bob-password-1"}
	for email, password := range accounts {
		cmd := exec.Command(bin, "user", "add", email, "--password-stdin", "--db", db)
		cmd.Env = e2eChildEnv()
		cmd.Stdin = strings.NewReader(password + "\n")
		if err := cmd.Run(); err != nil {
			t.Fatalf("user add %s --password-stdin: %v", email, err)
		}
	}
	if r := e2eRunCLI(t, bin, "channel", "add", "general", "--db", db); r.code != 0 {
		t.Fatalf("channel add: exit %d: %s", r.code, r.stderr)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	story := exec.CommandContext(ctx, "node", "story.js")
	story.Dir = compat
	story.Env = append(os.Environ(),
		"ZULITE_SITE="+srv.baseURL,
		"ALICE_EMAIL=alice@example.com", "ALICE_PASSWORD="+accounts["alice@example.com"],
		"BOB_EMAIL=bob@example.com", "BOB_PASSWORD="+accounts["bob@example.com"])
	out, err := story.CombinedOutput()
	if err != nil {
		t.Fatalf("zulip-js story failed (%v):\n%s\nserver log:\n%s", err, out, srv.logs())
	}
	for _, want := range []string{"ok 12 - log out", "ok 13 - the official app's start-up", "ok 18 - avatars", "- mentions:", "- rendering:", "- reactions.add", "- messages.update, getHistoryById and deleteById", "- direct messages:"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("zulip-js story: got\n%s\nwant every step, %q among them", out, want)
		}
	}
}
