package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestEndToEnd_SPECStory builds the real binary, serves a fresh database on
// a loopback port, administers it through the Unix socket while it runs,
// and walks the user story of SPEC §1 over HTTP in the request shapes of
// both official clients. API keys never appear in the test's output.
//
// This file's package-level helpers carry an e2e prefix (all but client,
// the one the story reads best with) because the package's other test
// files share their namespace.
func TestEndToEnd_SPECStory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	bin := e2eBuildBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "z.db")
	srv := e2eStartServer(t, bin, db)

	t.Run("bootstrap", func(t *testing.T) {
		e2eCheckZuliprc(t, filepath.Join(dir, "zuliprc"), srv)
	})

	var admin e2eAdmin
	if !t.Run("admin commands", func(t *testing.T) { admin = e2eRunAdminCommands(t, bin, db) }) {
		t.FailNow() // the story needs the accounts and the channel
	}

	alice := e2eNewClient(srv.baseURL, "alice@example.com", admin.aliceKey)
	bob := e2eNewClient(srv.baseURL, "bob@example.com", admin.bobKey)
	for _, sh := range []e2eShape{e2eZulipJS, e2ePython} {
		t.Run(sh.String(), func(t *testing.T) {
			e2eWalkStory(t, sh, alice, bob, admin.channelID)
			e2eWalkUserGroups(t, sh, alice, bob)
		})
	}

	t.Run("shutdown", func(t *testing.T) {
		alice.closeIdle()
		bob.closeIdle()
		exitErr := srv.stop()
		if exitErr != nil {
			t.Errorf("exit after SIGTERM: got %v, want status 0", exitErr)
		}
		logs := srv.logs()
		if !strings.Contains(logs, "msg=stopped") {
			t.Errorf("stderr after SIGTERM: got %q, want a line with msg=stopped", logs)
		}
		for _, secret := range []string{srv.ownerKey, admin.aliceKey, admin.bobKey, "Basic "} {
			if strings.Contains(logs, secret) {
				t.Errorf("the server log holds an API key or an Authorization header")
			}
		}
		e2eCheckMode(t, db, 0o600)
	})
}

// ---- the binary ----

// e2eBuildBinary answers the real binary, built once for the whole test
// process (it was built by every test that ran it, 25 builds a run).
func e2eBuildBinary(tb testing.TB) string {
	tb.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "zulite-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.dir, built.bin = dir, filepath.Join(dir, "zulite")
		cmd := exec.Command("go", "build", "-o", built.bin, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if built.err != nil {
		tb.Fatalf("go build: got %v, want success", built.err)
	}
	return built.bin
}

// built is the binary e2eBuildBinary built; TestMain removes it.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	if line := skipped.line(); line != "" {
		// go test ./... shows a passing package's output only with -v, so
		// the line goes to the terminal when there is one (a skipped suite
		// must not pass for a run one), else to stderr.
		out := io.Writer(os.Stderr)
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			defer tty.Close()
			out = tty
		}
		fmt.Fprintln(out, line)
	}
	os.Exit(code)
}

// skipped records the suites skipped for want of a tool (Node.js,
// Chromium, bash), so that TestMain can say in one line what did not run
// and how to run it.
var skipped skippedSuites

type skippedSuites struct {
	mu    sync.Mutex
	tests []string // top-level test names, in the order they skipped
	why   []string // "TestX: node not found: install ..."
}

// needTool skips t when found is false, saying what is missing and how to
// install it, and records the skip for TestMain's line; under CI=true it
// fails t instead, since CI installs every tool.
func needTool(t *testing.T, found bool, tool, how string) {
	t.Helper()
	if found {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found: %s", tool, how)
	}
	skipped.add(t.Name(), fmt.Sprintf("%s not found: %s", tool, how))
	t.Skipf("%s not found: %s", tool, how)
}

// needTools is needTool for tools looked up on PATH.
func needTools(t *testing.T, how string, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		_, err := exec.LookPath(tool)
		needTool(t, err == nil, tool, how)
	}
}

// Issue 35: a suite skipped for want of a tool is named, with what was
// missing and the command that runs it, once per top-level test.
func TestSkippedSuites_OneLineNamesEachSkipAndHowToRunIt(t *testing.T) {
	var s skippedSuites
	if got := s.line(); got != "" {
		t.Errorf("no skip: got %q, want no line", got)
	}
	s.add("TestCompat_ZulipJS", "node not found: install Node.js")
	s.add("TestREADME_ExamplesRunAsPasted/zulip-js", "npm not found: install npm")
	s.add("TestCompat_ZulipJS", "npm not found: install npm")
	want := "zulite: skipped for want of a tool (TestCompat_ZulipJS: node not found: install Node.js; TestREADME_ExamplesRunAsPasted: npm not found: install npm; TestCompat_ZulipJS: npm not found: install npm); once it is installed, go test -count=1 -run '^(TestCompat_ZulipJS|TestREADME_ExamplesRunAsPasted)$' . runs them"
	if got := s.line(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func (s *skippedSuites) add(test, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	test, _, _ = strings.Cut(test, "/")
	if !slices.Contains(s.tests, test) {
		s.tests = append(s.tests, test)
	}
	s.why = append(s.why, test+": "+why)
}

// line is what TestMain prints: each skip, and the command that runs the
// skipped tests once their tools are there; "" when none was skipped.
func (s *skippedSuites) line() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tests) == 0 {
		return ""
	}
	return fmt.Sprintf("zulite: skipped for want of a tool (%s); once it is installed, go test -count=1 -run '^(%s)$' . runs them", strings.Join(s.why, "; "), strings.Join(s.tests, "|"))
}

// e2eChildEnv is the test's environment without ZULITE_* settings, so that
// only the flags given decide what the binary does.
func e2eChildEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ZULITE_") {
			env = append(env, kv)
		}
	}
	return env
}

// e2eServer is a running `zulite serve`.
type e2eServer struct {
	cmd        *exec.Cmd
	baseURL    string
	ownerEmail string // from the bootstrap lines, on a new database
	ownerKey   string

	stderrDone chan struct{} // closed when stderr reaches EOF
	mu         sync.Mutex
	stdout     strings.Builder
	stderr     strings.Builder

	stopOnce sync.Once
	exitErr  error
}

// e2eListeningLine finds the listening address in a text or JSON log line.
var e2eListeningLine = regexp.MustCompile(`(?:msg=listening addr=|"msg":"listening","addr":")(127\.0\.0\.1:\d+)`)

// e2eStartServer starts `zulite serve` on a new database, on a loopback
// port chosen by the kernel, and waits for the listening line and the
// bootstrap credentials. The process is stopped when the test ends, if
// it is still running.
func e2eStartServer(t *testing.T, bin, db string, extra ...string) *e2eServer {
	t.Helper()
	return e2eLaunch(t, bin, db, true, extra)
}

// e2eRestartServer starts `zulite serve` on a database that has accounts:
// there is no bootstrap to wait for.
func e2eRestartServer(t *testing.T, bin, db string, extra ...string) *e2eServer {
	t.Helper()
	return e2eLaunch(t, bin, db, false, extra)
}

func e2eLaunch(t *testing.T, bin, db string, bootstrap bool, extra []string) *e2eServer {
	t.Helper()
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &e2eServer{stderrDone: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"serve", "--db", db, "--addr", "127.0.0.1:0"}, extra...)...)
	p.cmd.Env = e2eChildEnv()
	p.cmd.Stdout, p.cmd.Stderr = stdoutW, stderrW
	err = p.cmd.Start()
	stdoutW.Close() // the child holds its own copies
	stderrW.Close()
	if err != nil {
		stdoutR.Close()
		stderrR.Close()
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() { p.stop() })

	type credentials struct{ email, key string }
	creds := make(chan credentials, 1)
	go func() {
		defer stdoutR.Close()
		var c credentials
		sc := bufio.NewScanner(stdoutR)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stdout.WriteString(line + "\n")
			p.mu.Unlock()
			if v, ok := strings.CutPrefix(line, "email: "); ok {
				c.email = v
			}
			if v, ok := strings.CutPrefix(line, "key: "); ok {
				c.key = v
			}
			if c.email != "" && c.key != "" {
				creds <- c
				c = credentials{}
			}
		}
	}()
	addr := make(chan string, 1)
	go func() {
		defer close(p.stderrDone)
		defer stderrR.Close()
		sc := bufio.NewScanner(stderrR)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if m := e2eListeningLine.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
	}()

	timeout := time.After(10 * time.Second)
	for p.baseURL == "" || (bootstrap && p.ownerKey == "") {
		select {
		case a := <-addr:
			p.baseURL = "http://" + a
		case c := <-creds:
			p.ownerEmail, p.ownerKey = c.email, c.key
		case <-timeout:
			t.Fatalf("serve: got no listening line (or no bootstrap credentials) within 10 s; stderr:\n%s", p.logs())
		}
	}
	return p
}

// stop sends SIGTERM and waits for the process to exit, killing it if it
// has not within 10 s. It answers the exit error of the first call.
func (p *e2eServer) stop() error {
	p.stopOnce.Do(func() {
		exited := make(chan error, 1)
		go func() { exited <- p.cmd.Wait() }()
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			p.exitErr = fmt.Errorf("SIGTERM: %w", err)
		}
		select {
		case err := <-exited:
			if p.exitErr == nil {
				p.exitErr = err
			}
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-exited
			p.exitErr = errors.New("still running 10 s after SIGTERM; killed")
		}
		select {
		case <-p.stderrDone:
		case <-time.After(5 * time.Second):
		}
	})
	return p.exitErr
}

// logs is what the server has written to stderr so far: slog lines, which
// never hold keys.
func (p *e2eServer) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// output is what the server has written to stdout so far: the bootstrap
// lines, on a new database.
func (p *e2eServer) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String()
}

func e2eCheckMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Errorf("stat %s: %v", path, err)
		return
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("mode of %s: got %#o, want %#o", filepath.Base(path), got, want)
	}
}

// ---- bootstrap and admin commands ----

func e2eCheckZuliprc(t *testing.T, path string, srv *e2eServer) {
	if srv.ownerEmail != "owner@zulite.localhost" {
		t.Errorf("bootstrap email: got %q, want %q", srv.ownerEmail, "owner@zulite.localhost")
	}
	if !isAPIKey(srv.ownerKey) {
		t.Errorf("bootstrap key: got a key of %d characters, want 32 alphanumerics", len(srv.ownerKey))
	}
	e2eCheckMode(t, path, 0o600)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read zuliprc: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if lines[0] != "[api]" {
		t.Errorf("zuliprc first line: got %q, want %q", lines[0], "[api]")
	}
	values := map[string]string{}
	for _, line := range lines[1:] {
		k, v, _ := strings.Cut(line, "=")
		values[k] = v
	}
	if got := values["email"]; got != srv.ownerEmail {
		t.Errorf("zuliprc email: got %q, want %q", got, srv.ownerEmail)
	}
	if values["key"] != srv.ownerKey { // never print keys
		t.Errorf("zuliprc key: got a key different from the one printed on stdout, want the same")
	}
	if got := values["site"]; got != srv.baseURL {
		t.Errorf("zuliprc site: got %q, want %q", got, srv.baseURL)
	}
}

// e2eCLIResult is what one run of the binary left behind.
type e2eCLIResult struct {
	stdout, stderr string
	code           int
}

func e2eRunCLI(t *testing.T, bin string, args ...string) e2eCLIResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = e2eChildEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("zulite %s: got no exit within 10 s, want one", strings.Join(args, " "))
	case errors.As(err, &exit):
	case err != nil:
		t.Fatalf("zulite %s: %v", strings.Join(args, " "), err)
	}
	return e2eCLIResult{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// wantOK fails the test unless the command exited 0 with nothing on stderr.
func (r e2eCLIResult) wantOK(t *testing.T, what string) {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("%s: got exit %d, stderr %q; want exit 0, empty stderr", what, r.code, r.stderr)
	}
}

var e2eKeyLine = regexp.MustCompile(`^[A-Za-z0-9]{32}\n$`)

type e2eAdmin struct {
	aliceKey, bobKey string
	channelID        int64
}

// e2eRunAdminCommands adds two people and a channel through the running
// server's admin socket, with flags before and after the arguments.
func e2eRunAdminCommands(t *testing.T, bin, db string) e2eAdmin {
	var a e2eAdmin

	r := e2eRunCLI(t, bin, "--db", db, "user", "add", "alice@example.com", "--name", "Alice")
	r.wantOK(t, "user add alice")
	if !e2eKeyLine.MatchString(r.stdout) { // never print keys
		t.Fatalf("user add alice: got stdout of %d bytes, want a 32-character key alone on one line", len(r.stdout))
	}
	a.aliceKey = strings.TrimSpace(r.stdout)

	r = e2eRunCLI(t, bin, "user", "add", "bob@example.com", "--db", db)
	r.wantOK(t, "user add bob")
	if !e2eKeyLine.MatchString(r.stdout) {
		t.Fatalf("user add bob: got stdout of %d bytes, want a 32-character key alone on one line", len(r.stdout))
	}
	a.bobKey = strings.TrimSpace(r.stdout)
	if a.bobKey == a.aliceKey {
		t.Errorf("user add: got the same key for alice and bob, want different keys")
	}

	r = e2eRunCLI(t, bin, "channel", "add", "general", "--db", db, "--description", "General talk")
	r.wantOK(t, "channel add general")
	id, err := strconv.ParseInt(strings.TrimSuffix(r.stdout, "\n"), 10, 64)
	if err != nil || id <= 0 {
		t.Fatalf("channel add general: got stdout %q, want a positive channel id on one line", r.stdout)
	}
	a.channelID = id

	r = e2eRunCLI(t, bin, "channel", "list", "--db", db)
	r.wantOK(t, "channel list")
	if want := fmt.Sprintf("%d\tgeneral\tpublic\tGeneral talk\n", id); r.stdout != want {
		t.Errorf("channel list: got %q, want %q", r.stdout, want)
	}

	r = e2eRunCLI(t, bin, "user", "list", "--db", db)
	r.wantOK(t, "user list")
	e2eCheckUserList(t, r.stdout, [][3]string{
		{"owner@zulite.localhost", "owner", "active"},
		{"alice@example.com", "member", "active"},
		{"bob@example.com", "member", "active"},
	})

	r = e2eRunCLI(t, bin, "user", "add", "alice@example.com", "--db", db)
	if r.code == 0 {
		t.Errorf("user add alice again: got exit 0, want non-zero")
	}
	if strings.TrimSpace(r.stderr) == "" {
		t.Errorf("user add alice again: got empty stderr, want a message")
	}
	if strings.Contains(r.stderr, "goroutine") {
		t.Errorf("user add alice again: got a stack trace on stderr %q, want a plain message", r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("user add alice again: got %d bytes on stdout, want none", len(r.stdout))
	}
	return a
}

// e2eCheckUserList checks `user list` output: one line per account, in the
// order given, as distinct positive id, e-mail, role, state.
func e2eCheckUserList(t *testing.T, out string, want [][3]string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("user list: got %d lines %q, want %d", len(lines), out, len(want))
	}
	seen := map[int64]bool{}
	for i, line := range lines {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			t.Errorf("user list line %d: got %q, want 4 tab-separated fields", i+1, line)
			continue
		}
		id, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || id <= 0 || seen[id] {
			t.Errorf("user list line %d: got id %q, want a distinct positive integer", i+1, f[0])
		}
		seen[id] = true
		if got := [3]string{f[1], f[2], f[3]}; got != want[i] {
			t.Errorf("user list line %d: got %q, want %q", i+1, got, want[i])
		}
	}
}

// ---- HTTP clients ----

// e2eShape is how a client library encodes parameters.
type e2eShape int

const (
	// e2eZulipJS sends POST (and PATCH) bodies as multipart/form-data and
	// DELETE parameters in the query string.
	e2eZulipJS e2eShape = iota
	// e2ePython sends POST, PATCH and DELETE bodies urlencoded.
	e2ePython
)

func (s e2eShape) String() string {
	if s == e2eZulipJS {
		return "zulip-js shape"
	}
	return "python shape"
}

// newRequest builds a request as a client of this shape would send it.
func (s e2eShape) newRequest(method, target string, params url.Values) (*http.Request, error) {
	inQuery := method == http.MethodGet || method == http.MethodHead ||
		(s == e2eZulipJS && method == http.MethodDelete)
	if inQuery {
		if len(params) > 0 {
			target += "?" + params.Encode()
		}
		return http.NewRequest(method, target, nil)
	}
	if s == e2ePython {
		req, err := http.NewRequest(method, target, strings.NewReader(params.Encode()))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		return req, err
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, name := range slices.Sorted(maps.Keys(params)) {
		for _, v := range params[name] {
			if err := mw.WriteField(name, v); err != nil {
				return nil, err
			}
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	req, err := http.NewRequest(method, target, &body)
	if err == nil {
		req.Header.Set("Content-Type", mw.FormDataContentType())
	}
	return req, err
}

// client talks to the server as one account (or none, when email is "").
type client struct {
	base       string
	email, key string
	http       *http.Client
}

func e2eNewClient(base, email, key string) *client {
	return &client{base: base, email: email, key: key, http: &http.Client{Timeout: 10 * time.Second}}
}

// do sends one request and checks what every /api/v1/ answer must be: JSON
// with a trailing newline, result "success" exactly on 2xx, msg a string.
func (c *client) do(t *testing.T, method, path string, params url.Values, sh e2eShape) (int, map[string]any, http.Header) {
	t.Helper()
	req, err := sh.newRequest(method, c.base+path, params)
	if err != nil {
		t.Fatalf("%s %s: build request: %v", method, path, err)
	}
	if c.email != "" {
		req.SetBasicAuth(c.email, c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	if got := resp.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("%s %s: Content-Type: got %q, want %q", method, path, got, "application/json")
	}
	if !bytes.HasSuffix(raw, []byte("\n")) {
		t.Errorf("%s %s: body %q: got no trailing newline, want one", method, path, raw)
	}
	var body map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("%s %s: body %q: got invalid JSON (%v), want an object", method, path, raw, err)
	}
	wantResult := "error"
	if resp.StatusCode/100 == 2 {
		wantResult = "success"
	}
	if got := body["result"]; got != wantResult {
		t.Errorf("%s %s: status %d, result: got %v, want %q", method, path, resp.StatusCode, got, wantResult)
	}
	if _, ok := body["msg"].(string); !ok {
		t.Errorf("%s %s: msg: got %v, want a string", method, path, body["msg"])
	}
	return resp.StatusCode, body, resp.Header
}

func (c *client) closeIdle() { c.http.CloseIdleConnections() }

// withKey is the same client with another key, for failed logins.
func (c *client) withKey(key string) *client {
	return &client{base: c.base, email: c.email, key: key, http: c.http}
}

// e2eWantSuccess checks a success envelope that reports no ignored parameters.
func e2eWantSuccess(t *testing.T, what string, status int, body map[string]any) {
	t.Helper()
	if status != http.StatusOK {
		t.Fatalf("%s: got status %d, body %v; want 200", what, status, body)
	}
	if body["msg"] != "" {
		t.Errorf("%s: msg: got %v, want \"\"", what, body["msg"])
	}
	if got, ok := body["ignored_parameters_unsupported"]; ok {
		t.Errorf("%s: ignored_parameters_unsupported: got %v, want the field absent", what, got)
	}
}

// e2eWantError checks an error envelope.
func e2eWantError(t *testing.T, what string, status int, body map[string]any, wantStatus int, wantMsg, wantCode string) {
	t.Helper()
	if status != wantStatus {
		t.Errorf("%s: status: got %d, want %d", what, status, wantStatus)
	}
	if body["msg"] != wantMsg {
		t.Errorf("%s: msg: got %v, want %q", what, body["msg"], wantMsg)
	}
	if body["code"] != wantCode {
		t.Errorf("%s: code: got %v, want %q", what, body["code"], wantCode)
	}
	if _, ok := body["ignored_parameters_unsupported"]; ok {
		t.Errorf("%s: got ignored_parameters_unsupported on an error, want it absent", what)
	}
}

// e2eInt reads a JSON integer member of body.
func e2eInt(t *testing.T, what string, body map[string]any, name string) int64 {
	t.Helper()
	n, ok := jsonInt(body[name])
	if !ok {
		t.Fatalf("%s: %s: got %v, want an integer", what, name, body[name])
	}
	return n
}

// ---- the story ----

// e2eWalkStory is SPEC §1, steps 3 to 6, as clients of one shape send it.
// e2eWalkUserGroups makes a user group as the Python bindings do
// (create_user_group, get_user_groups, update_user_group_members: lists
// JSON-encoded by json.dumps, with its spaces) and as zulip-js would.
func e2eWalkUserGroups(t *testing.T, sh e2eShape, alice, bob *client) {
	var ids [2]int64
	for i, c := range []*client{alice, bob} {
		_, me, _ := c.do(t, "GET", "/api/v1/users/me", nil, sh)
		ids[i] = e2eInt(t, c.email+" users/me", me, "user_id")
	}
	name := "support " + sh.String()
	status, body, _ := alice.do(t, "POST", "/api/v1/user_groups/create", url.Values{"name": {name}, "description": {"Support team"},
		"members": {fmt.Sprintf("[%d, %d]", ids[0], ids[1])}}, sh)
	e2eWantSuccess(t, "create_user_group", status, body)
	group := e2eInt(t, "create_user_group", body, "group_id")
	status, body, _ = bob.do(t, "GET", "/api/v1/user_groups", nil, sh)
	e2eWantSuccess(t, "get_user_groups", status, body)
	found := false
	for _, g := range body["user_groups"].([]any) {
		if o := g.(map[string]any); o["name"] == name {
			found = fmt.Sprint(o["members"]) == fmt.Sprint([]any{float64(ids[0]), float64(ids[1])})
		}
	}
	if !found {
		t.Errorf("get_user_groups: got %v, want %q with both members", body["user_groups"], name)
	}
	path := "/api/v1/user_groups/" + strconv.FormatInt(group, 10) + "/members"
	status, body, _ = alice.do(t, "POST", path, url.Values{"delete": {fmt.Sprintf("[%d]", ids[1])}}, sh)
	e2eWantSuccess(t, "update_user_group_members", status, body)
	status, body, _ = bob.do(t, "GET", path, nil, sh)
	e2eWantSuccess(t, "get_user_group_members", status, body)
	if got := fmt.Sprint(body["members"]); got != fmt.Sprint([]any{float64(ids[0])}) {
		t.Errorf("get_user_group_members: got %s, want alice alone", got)
	}
}

func e2eWalkStory(t *testing.T, sh e2eShape, alice, bob *client, channelID int64) {
	anonymous := e2eNewClient(alice.base, "", "")

	// 3. The mobile client asks for the server settings and logs in.
	status, body, _ := anonymous.do(t, "GET", "/api/v1/server_settings", url.Values{"stray": {"1"}}, sh)
	if status != http.StatusOK {
		t.Fatalf("server_settings: got status %d, body %v; want 200", status, body)
	}
	if level := e2eInt(t, "server_settings", body, "zulip_feature_level"); level < 277 {
		t.Errorf("server_settings: zulip_feature_level: got %d, want >= 277", level)
	}
	if got := body["realm_url"]; got != alice.base {
		t.Errorf("server_settings: realm_url: got %v, want %q", got, alice.base)
	}
	if got, ok := body["ignored_parameters_unsupported"]; ok {
		t.Errorf("server_settings: ignored_parameters_unsupported: got %v, want the field absent", got)
	}

	status, body, _ = alice.do(t, "GET", "/api/v1/users/me", nil, sh)
	e2eWantSuccess(t, "alice users/me", status, body)
	if body["email"] != alice.email || body["full_name"] != "Alice" {
		t.Errorf("alice users/me: got email %v, full_name %v; want %q, \"Alice\"", body["email"], body["full_name"], alice.email)
	}
	if role := e2eInt(t, "alice users/me", body, "role"); role != 400 {
		t.Errorf("alice users/me: role: got %d, want 400", role)
	}

	status, body, hdr := alice.withKey(strings.Repeat("x", 32)).do(t, "GET", "/api/v1/users/me", nil, sh)
	e2eWantError(t, "wrong key", status, body, http.StatusUnauthorized, "Invalid API key", "UNAUTHORIZED")
	if got := hdr.Get("WWW-Authenticate"); got != `Basic realm="zulip"` {
		t.Errorf("wrong key: WWW-Authenticate: got %q, want %q", got, `Basic realm="zulip"`)
	}

	// Both subscribe to the channel the admin made; the answer names them
	// by user id (feature level 289).
	for _, c := range []*client{alice, bob} {
		_, me, _ := c.do(t, "GET", "/api/v1/users/me", nil, sh)
		key := strconv.FormatInt(e2eInt(t, c.email+" users/me", me, "user_id"), 10)
		status, body, _ := c.do(t, "POST", "/api/v1/users/me/subscriptions",
			url.Values{"subscriptions": {`[{"name":"general"}]`}}, sh)
		e2eWantSuccess(t, c.email+" subscribe", status, body)
		if !e2eNamesChannel(body["subscribed"], key, "general") && !e2eNamesChannel(body["already_subscribed"], key, "general") {
			t.Errorf("%s subscribe: got subscribed %v, already_subscribed %v; want general under %s in one of them",
				c.email, body["subscribed"], body["already_subscribed"], key)
		}
	}

	status, body, _ = alice.do(t, "GET", "/api/v1/get_stream_id", url.Values{"stream": {"general"}}, sh)
	e2eWantSuccess(t, "get_stream_id", status, body)
	if got := e2eInt(t, "get_stream_id", body, "stream_id"); got != channelID {
		t.Errorf("get_stream_id: stream_id: got %d, want %d (printed by channel add)", got, channelID)
	}

	// Alice's phone registers its push token.
	token := url.Values{"token": {"aa11bb22cc33" + fmt.Sprintf("%02x", int(sh))}}
	register := url.Values{"token": token["token"], "appid": {"org.zulip.Zulip"}}
	status, body, _ = alice.do(t, "POST", "/api/v1/users/me/apns_device_token", register, sh)
	e2eWantSuccess(t, "register apns token", status, body)

	// 4. Bob posts to the channel.
	var lastID int64
	for i := 1; i <= 3; i++ {
		status, body, _ := bob.do(t, "POST", "/api/v1/messages", url.Values{
			"type": {"stream"}, "to": {"general"}, "topic": {"lunch"},
			"content": {fmt.Sprintf("Lunch at noon? (%d, %s)", i, sh)},
		}, sh)
		what := fmt.Sprintf("send message %d", i)
		e2eWantSuccess(t, what, status, body)
		id := e2eInt(t, what, body, "id")
		if id <= lastID {
			t.Errorf("%s: id: got %d, want more than %d", what, id, lastID)
		}
		lastID = id
	}

	// 5. Alice marks the channel read; an unknown channel is refused.
	status, body, _ = alice.do(t, "POST", "/api/v1/mark_stream_as_read",
		url.Values{"stream_id": {strconv.FormatInt(channelID, 10)}}, sh)
	e2eWantSuccess(t, "mark_stream_as_read", status, body)

	status, body, _ = alice.do(t, "POST", "/api/v1/mark_stream_as_read", url.Values{"stream_id": {"9999"}}, sh)
	e2eWantError(t, "mark_stream_as_read 9999", status, body, http.StatusBadRequest, "Invalid channel ID", "BAD_REQUEST")

	// 6. On logout the client removes its token; a second removal fails.
	status, body, _ = alice.do(t, "DELETE", "/api/v1/users/me/apns_device_token", token, sh)
	e2eWantSuccess(t, "remove apns token", status, body)

	status, body, _ = alice.do(t, "DELETE", "/api/v1/users/me/apns_device_token", token, sh)
	e2eWantError(t, "remove apns token again", status, body, http.StatusBadRequest, "Token does not exist", "BAD_REQUEST")
	if len(body) != 3 {
		t.Errorf("remove apns token again: got body %v, want exactly result, msg and code", body)
	}
}

// e2eNamesChannel reports whether v, a JSON object of user id → channel
// names, lists channel under the id.
func e2eNamesChannel(v any, userID, channel string) bool {
	m, _ := v.(map[string]any)
	names, _ := m[userID].([]any)
	return slices.Contains(names, any(channel))
}
