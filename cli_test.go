package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
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
	if err != nil || !strings.Contains(out, "feature level 421") {
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

// Every row of flagTable defines (its default has its field's type), and
// a flag's environment variable is its name in ZULITE_ form.
func TestFlagTable_EveryFlagDefinesWithItsVariable(t *testing.T) {
	fs := flag.NewFlagSet("all", flag.ContinueOnError)
	var o options
	for _, f := range flagTable {
		f.define(fs, &o)
		if want := "ZULITE_" + strings.ToUpper(strings.ReplaceAll(f.name, "-", "_")); f.env != "" && f.env != want {
			t.Errorf("flag %s: got variable %s, want %s", f.name, f.env, want)
		}
		if f.command != "" {
			if _, ok := findCommand(strings.Fields(f.command)); !ok {
				t.Errorf("flag %s: got command %q, want one of the commands", f.name, f.command)
			}
		}
	}
}

// Help asked for is an answer: on stdout, exit 0, for every command and
// for bare zulite; a wrong flag is still a usage error (issue 11, item 9).
func TestHelp_AskedForIsAnAnswerNotAnError(t *testing.T) {
	for _, args := range [][]string{{"serve", "--help"}, {"--help"}, {"-h"}, {"user", "add", "--help"}, {"backup", "-help"}} {
		out, errOut, err := runCLI(t, nil, args...)
		if err != nil || !strings.Contains(out, "-db") || errOut != "" {
			t.Errorf("zulite %q: got %v, %d bytes on stdout, stderr %q; want success and the flags on stdout", args, err, len(out), errOut)
		}
	}
	if out, errOut, err := runCLI(t, nil, "help"); err != nil || !strings.Contains(out, "user add EMAIL") || errOut != "" {
		t.Errorf("zulite help: got %v, stdout %q, stderr %q; want success and the commands on stdout", err, out, errOut)
	}
	if _, _, err := runCLI(t, nil, "serve", "--no-such-flag"); !errors.Is(err, errUsage) {
		t.Errorf("a wrong flag: got %v, want a usage error", err)
	}
}

// A binary without Go's VCS stamp says so, and one stamped with
// -ldflags "-X main.buildCommit=..." names that commit.
func TestVersion_SaysWhenNoCommitIsRecorded(t *testing.T) {
	if info, ok := debug.ReadBuildInfo(); ok && slices.ContainsFunc(info.Settings, func(s debug.BuildSetting) bool { return s.Key == "vcs.revision" }) {
		t.Skip("this test binary carries Go's VCS stamp")
	}
	if out := mustRunCLI(t, nil, "version"); !strings.Contains(out, "no commit recorded") {
		t.Errorf("version without a stamp: got %q, want it to say no commit is recorded", out)
	}
	defer func(old string) { buildCommit = old }(buildCommit)
	buildCommit = "0123abc"
	if out := mustRunCLI(t, nil, "version"); !strings.Contains(out, "commit 0123abc") {
		t.Errorf("version with buildCommit: got %q, want commit 0123abc", out)
	}
}

// Issue 29: the server owns its goroutines. When serve fails after
// starting them (here the admin socket's name is taken by a directory),
// they end with it, before the store closes, though the caller's
// context goes on.
func TestServe_AFailedStartLeavesNoGoroutineBehind(t *testing.T) {
	running := func() int {
		buf := make([]byte, 1<<20)
		for {
			n := runtime.Stack(buf, true)
			if n < len(buf) {
				buf = buf[:n]
				break
			}
			buf = make([]byte, 2*len(buf))
		}
		return strings.Count(string(buf), "(*eventHub).run(") + strings.Count(string(buf), "uploadJanitor(")
	}
	before := running()
	db := filepath.Join(t.TempDir(), "z.db")
	if err := os.MkdirAll(filepath.Join(socketPath(db), "taken"), 0o700); err != nil {
		t.Fatal(err)
	}
	var out, errOut syncBuffer
	err := run(context.Background(), []string{"serve", "--db", db, "--addr", "127.0.0.1:0"}, func(string) string { return "" }, strings.NewReader(""), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "admin socket") {
		t.Fatalf("serve with its socket's name taken: got %v, want the admin socket's error", err)
	}
	if after := running(); after != before {
		t.Errorf("the hub's and the upload janitor's goroutines after serve returned: got %d, want %d", after, before)
	}
}

// Issue 35: "zulite user" alone lists the user commands, not every
// command, and "zulite --help" lists the commands, not serve's flags.
func TestHelp_AGroupAloneListsItsCommandsAndBareHelpListsThemAll(t *testing.T) {
	for _, c := range []struct{ group, own, other string }{{"user", "user deactivate EMAIL", "channel add"}, {"channel", "channel add NAME", "user add"}, {"push", "push register EMAIL HOSTNAME", "user add"}} {
		_, stderr, err := runCLI(t, nil, c.group)
		if !errors.Is(err, errUsage) || !strings.Contains(stderr, c.own) || strings.Contains(stderr, c.other) {
			t.Errorf("zulite %s: got %v, stderr %q; want a usage error listing %q and not %q", c.group, err, stderr, c.own, c.other)
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--db", "x.db", "--help"}} {
		out, _, err := runCLI(t, nil, args...)
		if err != nil || !strings.Contains(out, "user add EMAIL") || !strings.Contains(out, "channel list") || strings.Contains(out, "-addr") {
			t.Errorf("zulite %q: got %v, stdout %q; want the commands, not serve's flags", args, err, out)
		}
	}
}

// Issue 35: a wrong number of arguments says what was unexpected or
// missing, beside the command's usage.
func TestRun_AWrongArgumentCountSaysWhatIsWrong(t *testing.T) {
	db := filepath.Join(t.TempDir(), "z.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "extra-arg"}, `zulite serve [flags]: unexpected "extra-arg"`},
		{[]string{"user", "add", "a@example.com", "b", "c"}, `zulite user add EMAIL [flags]: unexpected "b c"`},
		{[]string{"user", "add"}, "zulite user add EMAIL [flags]: EMAIL missing"},
		{[]string{"push", "register", "a@example.com"}, "zulite push register EMAIL HOSTNAME [flags]: HOSTNAME missing"},
	} {
		_, _, err := runCLI(t, nil, append(c.args, "--db", db)...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("zulite %q: got %v, want a usage error saying %q", c.args, err, c.want)
		}
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("database after refused command lines: got %v, want none made", err)
	}
}

// Issue 35: user password, deactivate and reactivate say what changed.
func TestRun_AccountCommandsSayWhatChanged(t *testing.T) {
	db := filepath.Join(t.TempDir(), "z.db")
	mustRunCLI(t, nil, "--db", db, "user", "add", "alice@example.com")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"user", "password", "alice@example.com", "--db", db}, func(string) string { return "" }, strings.NewReader("a long password\n"), &out, &errOut); err != nil {
		t.Fatalf("user password: %v\n%s", err, errOut.String())
	}
	if got, want := out.String(), "alice@example.com has the new password; its web sessions are ended (its API keys still work).\n"; got != want {
		t.Errorf("user password: got %q, want %q", got, want)
	}
	if strings.Contains(out.String()+errOut.String(), "a long password") {
		t.Errorf("user password: the password reached the output")
	}
	if got := mustRunCLI(t, nil, "--db", db, "user", "deactivate", "alice@example.com"); !strings.HasPrefix(got, "alice@example.com is deactivated:") {
		t.Errorf("user deactivate: got %q, want it to say the account is deactivated", got)
	}
	if got := mustRunCLI(t, nil, "--db", db, "user", "list"); got != "1\talice@example.com\tmember\tdeactivated\n" {
		t.Errorf("user list after deactivate: got %q", got)
	}
	if got := mustRunCLI(t, nil, "--db", db, "user", "reactivate", "alice@example.com"); !strings.HasPrefix(got, "alice@example.com is active:") {
		t.Errorf("user reactivate: got %q, want it to say the account is active", got)
	}
}

// Issue 35: a database made because none was at --db's path is announced
// with that path, by serve (with the owner's credentials) and by admin
// commands (on stderr, their stdout being for answers); an existing one
// is not.
func TestRun_ANewDatabaseIsAnnouncedWithItsPath(t *testing.T) {
	dir := t.TempDir()
	served := filepath.Join(dir, "served.db")
	announced := func(path string) string { return "Created a new database: " + path + " (" }
	stdout, _, stop := startServe(t, served, nil)
	first, _, _ := strings.Cut(stdout.String(), "\n") // the lines after it hold the owner's key
	if !strings.HasPrefix(first, announced(served)) || !strings.Contains(first, "--db PATH or ZULITE_DB=PATH") {
		t.Errorf("first serve's first line: got %q, want it to start with %q and name --db and ZULITE_DB", first, announced(served))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if stdout, _, _ := startServe(t, served, nil); stdout.String() != "" {
		t.Errorf("second serve's stdout: got %d bytes, want none: no new database, no new owner", len(stdout.String()))
	}

	admin := filepath.Join(dir, "admin.db")
	if _, stderr, err := runCLI(t, nil, "--db", admin, "channel", "list"); err != nil || !strings.HasPrefix(stderr, announced(admin)) {
		t.Errorf("channel list on no file: got %v, stderr %q; want %q", err, stderr, announced(admin))
	}
	if _, stderr, err := runCLI(t, nil, "--db", admin, "channel", "list"); err != nil || stderr != "" {
		t.Errorf("channel list again: got %v, stderr %q; want nothing", err, stderr)
	}
}
