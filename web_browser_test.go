package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// chromiumPath finds Debian's chromium (or $CHROMIUM).
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestWeb_Browser runs webtest/browser.test.js: the web page in headless
// Chromium (puppeteer-core, pinned in webtest/package.json) against the
// real binary, two people in two browser contexts. Screenshots go to the
// test's artifact directory (go test -artifacts -outputdir DIR keeps
// them). Without Chromium or Node.js it skips, saying how to install
// them; under CI=true it fails instead.
func TestWeb_Browser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs Chromium; skipped with -short")
	}
	needTools(t, "install Node.js and npm (Debian: apt-get install -y nodejs npm) to run the browser suite", "node", "npm")
	chromium := chromiumPath()
	needTool(t, chromium != "", "chromium", "install Chromium (Debian: apt-get install -y chromium) to run the browser suite")
	dir, err := filepath.Abs("webtest")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "puppeteer-core")); err != nil {
		npm := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		npm.Dir = dir
		if out, err := npm.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in webtest/: %v\n%s", err, out)
		}
	}

	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	// The organisation has a name of its own, which the login page and
	// the window's title must show instead of zulite's.
	const realmName = "Lakeside Rowing Club"
	// The suite drives two accounts far faster than people do: over
	// its settings steps Bob passes the default 200 requests a minute
	// (ratelimit_test.go holds the limits themselves).
	serveArgs := []string{"--realm-name", realmName, "--rate-limit", "60:1000,3600:10000"}
	srv := e2eStartServer(t, bin, db, serveArgs...)
	addr := strings.TrimPrefix(srv.baseURL, "http://")
	accounts := []struct{ email, name, password string }{
		{"alice@example.com", "Alice", "alice-password-1"},
		{"bob@example.com", "Bob", "bob-password-1"},
	}
	for i, a := range accounts {
		args := []string{"user", "add", a.email, "--name", a.name, "--password-stdin", "--db", db}
		if i == 0 {
			args = append(args, "--admin") // Alice runs the organisation from the page
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = e2eChildEnv()
		cmd.Stdin = strings.NewReader(a.password + "\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("user add %s: %v\n%s", a.email, err, out)
		}
	}
	for _, channel := range []string{"general", "results"} {
		if r := e2eRunCLI(t, bin, "channel", "add", channel, "--db", db); r.code != 0 {
			t.Fatalf("channel add %s: exit %d: %s", channel, r.code, r.stderr)
		}
	}
	// The API stamps a message with the time it is sent: yesterday's
	// messages, for the date line where a run of them reaches today,
	// are written by the store itself, its clock set back a day, while
	// the server is down.
	if err := srv.stop(); err != nil {
		t.Fatalf("stop the server: %v", err)
	}
	seedYesterday(t, db, accounts[0].email, "results", "autumn head", "The autumn head is over: we came second", "Photos to follow")
	srv = e2eRestartServer(t, bin, db, append([]string{"--addr", addr}, serveArgs...)...)

	out := t.ArtifactDir()
	node := exec.CommandContext(ctx, "node", "--test-reporter=tap", "browser.test.js")
	node.Dir = dir
	node.Env = append(os.Environ(), "ZULITE_SITE="+srv.baseURL, "CHROMIUM="+chromium, "OUT_DIR="+out, "REALM_NAME="+realmName,
		"ALICE_EMAIL="+accounts[0].email, "ALICE_PASSWORD="+accounts[0].password,
		"BOB_EMAIL="+accounts[1].email, "BOB_PASSWORD="+accounts[1].password)
	stdin, err := node.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := node.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	node.Stderr = &stderr
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu         sync.Mutex
		transcript strings.Builder
	)
	current := srv
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		mu.Lock()
		transcript.WriteString(line + "\n")
		mu.Unlock()
		switch {
		case strings.Contains(line, "BUDGET "):
			t.Log(strings.TrimSpace(line[strings.Index(line, "BUDGET "):]))
		case strings.Contains(line, "SKIP "):
			// The server serves direct messages and edits now: a step
			// that finds them missing is a failure, not a skip.
			t.Error(strings.TrimSpace(line[strings.Index(line, "SKIP "):]))
		case line == "RESTART":
			// Down for a moment, then up on the same address and
			// database: the pages must carry on by themselves.
			if err := current.stop(); err != nil {
				t.Errorf("stop the server: %v", err)
			}
			time.Sleep(500 * time.Millisecond)
			current = e2eRestartServer(t, bin, db, append([]string{"--addr", addr}, serveArgs...)...)
			io.WriteString(stdin, "RESTARTED\n")
		case strings.HasPrefix(line, "PASSWORD "):
			// A new password from the command line, as an
			// administrator sets it: the account's open pages end.
			email := strings.TrimPrefix(line, "PASSWORD ")
			cmd := exec.Command(bin, "user", "password", email, "--db", db)
			cmd.Env = e2eChildEnv()
			cmd.Stdin = strings.NewReader("a-new-password-1\n")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("user password %s: %v\n%s", email, err, out)
			}
			io.WriteString(stdin, "PASSWORD CHANGED\n")
		}
	}
	err = node.Wait()
	if err != nil {
		t.Fatalf("browser suite failed (%v):\n%s\nstderr:\n%s\nserver log:\n%s", err, transcript.String(), stderr.String(), current.logs())
	}
	t.Logf("screenshots in %s", out)
}

// seedYesterday posts the contents to the channel's topic as the
// account, a day ago by the store's clock.
func seedYesterday(t *testing.T, db, email, channel, topic string, contents ...string) {
	t.Helper()
	st, err := openStore(db, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	st.now = func() time.Time { return time.Now().Add(-24 * time.Hour) }
	sender, err := st.userByEmail(email)
	if err != nil {
		t.Fatal(err)
	}
	for _, content := range contents {
		if _, err := st.sendMessage(sender, channelRef{Name: channel}, topic, content, "test"); err != nil {
			t.Fatalf("post %q a day ago: %v", content, err)
		}
	}
}

// TestWeb_DemoScreenshots takes the README's screenshots: webtest/demo.js
// seeds a rowing club through the API (five people, three channels, a
// race being planned with a table, emoji, reactions and an uploaded
// course map) and photographs it, desktop and phone, light and dark.
// It runs only when ZULITE_DEMO_SCREENSHOTS names the folder to write
// to (docs/ for the README).
func TestWeb_DemoScreenshots(t *testing.T) {
	dest := os.Getenv("ZULITE_DEMO_SCREENSHOTS")
	if dest == "" {
		t.Skip("set ZULITE_DEMO_SCREENSHOTS=docs to take the README's screenshots")
	}
	needTools(t, "install Node.js and npm to take the screenshots", "node", "npm")
	chromium := chromiumPath()
	needTool(t, chromium != "", "chromium", "install Chromium to take the screenshots")
	dest, err := filepath.Abs(dest)
	if err != nil {
		t.Fatal(err)
	}
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	srv := e2eStartServer(t, bin, db, "--realm-name", "Lakeside Rowing Club")
	const email, password = "maya@lakeside.example", "maya-lakeside-1"
	cmd := exec.Command(bin, "user", "add", email, "--name", "Maya Okafor", "--password-stdin", "--admin", "--db", db)
	cmd.Env = e2eChildEnv()
	cmd.Stdin = strings.NewReader(password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("user add: %v\n%s", err, out)
	}
	// The first start's owner account is nobody in the club.
	if r := e2eRunCLI(t, bin, "user", "deactivate", srv.ownerEmail, "--db", db); r.code != 0 {
		t.Fatalf("user deactivate: exit %d: %s", r.code, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := exec.CommandContext(ctx, "node", "demo.js")
	node.Dir = "webtest"
	node.Env = append(os.Environ(), "ZULITE_SITE="+srv.baseURL, "CHROMIUM="+chromium, "OUT_DIR="+dest, "OWNER_EMAIL="+email, "OWNER_PASSWORD="+password)
	if out, err := node.CombinedOutput(); err != nil {
		t.Fatalf("demo.js: %v\n%s\nserver log:\n%s", err, out, srv.logs())
	}
}
