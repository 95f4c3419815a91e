package main

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"zulite/internal/conns"
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

// A damaged database file ends `serve` and an admin command with one
// line naming the file and what to do, a non-zero exit, and the file as it
// was: no bus error, no stack. The file is cut short at several places,
// and has a page overwritten with garbage.
func TestDamagedDatabase_OneClearLineAndTheFileUntouched(t *testing.T) {
	bin := e2eBuildBinary(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	srv := e2eStartServer(t, bin, good)
	if err := srv.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	for i := range 20 {
		e2eRunCLI(t, bin, "user", "add", "u"+strconv.Itoa(i)+"@example.com", "--db", good).wantOK(t, "user add")
	}
	whole, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	usersPage, rootPage, used := pagesOf(t, good)
	damage := map[string]func([]byte) []byte{
		"cut to 100 bytes":           func(b []byte) []byte { return b[:100] },
		"cut inside page 1":          func(b []byte) []byte { return b[:5000] },
		"cut to half":                func(b []byte) []byte { return b[:len(b)/2] },
		"cut one page short":         func(b []byte) []byte { return b[:used-4096] },
		"both headers overwritten":   func(b []byte) []byte { return overwrite(overwrite(b, 0), 1) },
		"root page overwritten":      func(b []byte) []byte { return overwrite(b, rootPage) },
		"accounts' page overwritten": func(b []byte) []byte { return overwrite(b, usersPage) },
	}
	for name, harm := range damage {
		db := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".db")
		damaged := harm(slices.Clone(whole))
		if err := os.WriteFile(db, damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"serve", "--db", db, "--addr", "127.0.0.1:0"}, {"user", "list", "--db", db}} {
			r := e2eRunCLI(t, bin, args...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code == 0 || len(lines) != 1 || !strings.Contains(lines[0], db+" is damaged") || !strings.Contains(lines[0], "zulite backup") {
				t.Errorf("%s, zulite %s: got exit %d and %d lines on stderr, first %q; want a non-zero exit and one line naming the file and `zulite backup`",
					name, args[0], r.code, len(lines), firstLine(r.stderr))
			}
			if after, err := os.ReadFile(db); err != nil || !bytes.Equal(after, damaged) {
				t.Errorf("%s, zulite %s: the file changed (%v)", name, args[0], err)
			}
		}
	}
}

// overwrite fills page n (bbolt's 4096-byte pages) with a fixed pattern
// that is no valid page.
func overwrite(b []byte, n int) []byte {
	for i := n * 4096; i < (n+1)*4096 && i < len(b); i++ {
		b[i] = byte(i*7 + 3)
	}
	return b
}

// pagesOf finds, in a database file, the page of the accounts bucket
// and of the root bucket, to damage them, and the bytes its pages use.
func pagesOf(t *testing.T, path string) (users, root, used int) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bbolt.Tx) error {
		users, root, used = int(tx.Bucket(bucketUsers).Root()), int(tx.Cursor().Bucket().Root()), int(tx.Size())
		return nil
	})
	if err != nil || users == 0 || root == 0 {
		t.Fatalf("pages: got users %d, root %d (%v)", users, root, err)
	}
	return users, root, used
}

// Behind a reverse proxy (--trusted-proxies), one client's wrong keys
// lock out that client only: everyone else, whose requests come through
// the same proxy, still gets in with a right key (issue 11, item 3).
func TestTrustedProxies_OneClientsGuessesLockOutOnlyThatClient(t *testing.T) {
	bin := e2eBuildBinary(t)
	srv := e2eStartServer(t, bin, filepath.Join(t.TempDir(), "z.db"), "--trusted-proxies", "127.0.0.1")
	defer srv.stop()
	me := func(from, key string) int {
		req, err := http.NewRequest(http.MethodGet, srv.baseURL+"/api/v1/users/me", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(srv.ownerEmail, key)
		req.Header.Set("X-Forwarded-For", from)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	wrong := strings.Repeat("0", 32)
	for i := range 60 {
		if got := me("203.0.113.7", wrong); got != http.StatusUnauthorized {
			t.Fatalf("guess %d: got %d, want 401", i, got)
		}
	}
	for _, c := range []struct {
		from string
		want int
	}{
		{"203.0.113.7", http.StatusTooManyRequests},               // the guesser, even with the right key
		{"198.51.100.9", http.StatusOK},                           // anyone else behind the proxy
		{"198.51.100.9, 203.0.113.7", http.StatusTooManyRequests}, // the proxy saw the guesser: a hop the guesser wrote is not believed
	} {
		if got := me(c.from, srv.ownerKey); got != c.want {
			t.Errorf("right key from %s: got %d, want %d", c.from, got, c.want)
		}
	}
}

// One client holding many connections with partial headers gets its
// share of --max-connections and no more: the rest are closed at once
// (the oldest quiet ones first), while another client's long poll keeps
// waiting and its requests are answered (issue 11, item 5).
func TestMaxConnections_PartialHeadersGetAShareAndLongPollsLive(t *testing.T) {
	bin := e2eBuildBinary(t)
	srv := e2eStartServer(t, bin, filepath.Join(t.TempDir(), "z.db"), "--max-connections", "64")
	defer srv.stop()
	addr := strings.TrimPrefix(srv.baseURL, "http://")
	from := func(ip string) *net.Dialer {
		return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 2 * time.Second}
	}
	client := func(ip string) *http.Client {
		return &http.Client{Transport: &http.Transport{DialContext: from(ip).DialContext}, Timeout: 70 * time.Second}
	}
	legit := client("127.0.0.3")
	call := func(method, path string, params url.Values) (int, map[string]any) {
		req, err := http.NewRequest(method, srv.baseURL+path+"?"+params.Encode(), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(srv.ownerEmail, srv.ownerKey)
		resp, err := legit.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return resp.StatusCode, body
	}
	code, reg := call(http.MethodPost, "/api/v1/register", url.Values{"event_types": {`["message"]`}})
	if code != 200 {
		t.Fatalf("register: got %d", code)
	}
	queue, _ := reg["queue_id"].(string)
	polled := make(chan int, 1)
	go func() { // the long poll waits, on a connection of its own
		c := client("127.0.0.3")
		req, _ := http.NewRequest(http.MethodGet, srv.baseURL+"/api/v1/events?"+url.Values{"queue_id": {queue}, "last_event_id": {"-1"}}.Encode(), nil)
		req.SetBasicAuth(srv.ownerEmail, srv.ownerKey)
		resp, err := c.Do(req)
		if err != nil {
			polled <- 0
			return
		}
		resp.Body.Close()
		polled <- resp.StatusCode
	}()
	time.Sleep(200 * time.Millisecond) // the poll is being served

	// The attacker: 300 connections from one address, each with half a
	// request's headers, then as many from ten more addresses.
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	open := func(ip string, n int) {
		for range n {
			c, err := from(ip).Dial("tcp", addr)
			if err != nil {
				continue // refused outright is fine too
			}
			c.Write([]byte("GET /api/v1/users/me HTTP/1.1\r\nHost: x\r\n"))
			held = append(held, c)
		}
	}
	stillOpen := func(ip string) int {
		n := 0
		for _, c := range held {
			if !strings.HasPrefix(c.LocalAddr().String(), ip+":") {
				continue
			}
			c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			if _, err := c.Read(make([]byte, 1)); err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
				n++
			}
		}
		return n
	}
	open("127.0.0.2", 300)
	if n := stillOpen("127.0.0.2"); n > conns.Share(64) {
		t.Errorf("one address: %d connections left open, want at most its share, %d", n, conns.Share(64))
	}
	for i := range 10 {
		open("127.0.0."+strconv.Itoa(10+i), 30)
	}
	total := 0
	for i := range 10 {
		total += stillOpen("127.0.0." + strconv.Itoa(10+i))
	}
	if total+stillOpen("127.0.0.2") > 64 {
		t.Errorf("eleven addresses: %d connections left open, want at most 64", total+stillOpen("127.0.0.2"))
	}
	// The other client is still served: a new request, and the waiting poll.
	if code, _ := call(http.MethodGet, "/api/v1/users/me", nil); code != 200 {
		t.Errorf("another client's request while flooded: got %d, want 200", code)
	}
	if code, _ := call(http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"nowhere"}, "topic": {"t"}, "content": {"x"}}); code != 400 {
		t.Errorf("another client's send while flooded: got %d, want the 400 for a missing channel", code)
	}
	code, _ = call(http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"general"}]`}})
	if code != 200 {
		t.Fatalf("subscribe while flooded: got %d", code)
	}
	if code, _ := call(http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"wake the poll"}}); code != 200 {
		t.Errorf("send while flooded: got %d, want 200", code)
	}
	select {
	case code := <-polled:
		if code != 200 {
			t.Errorf("the long poll: got %d, want 200 with the message", code)
		}
	case <-time.After(10 * time.Second):
		t.Error("the long poll did not answer the send")
	}
	_, metrics := e2eMetrics(t, srv)
	if !strings.Contains(metrics, "zulite_connections_refused_total ") {
		t.Errorf("metrics: no zulite_connections_refused_total")
	}
	seen := map[string]bool{} // Prometheus refuses a page that declares a metric twice
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "# TYPE ") {
			if seen[line] {
				t.Errorf("metrics: %q declared twice", line)
			}
			seen[line] = true
		}
	}
}

// e2eMetrics reads the server's /metrics as its owner.
func e2eMetrics(t *testing.T, srv *e2eServer) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.baseURL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(srv.ownerEmail, srv.ownerKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// e2eMetric is one figure of the server's /metrics, read as its owner;
// a page without it fails the test.
func e2eMetric(t *testing.T, srv *e2eServer, name string) int64 {
	t.Helper()
	status, page := e2eMetrics(t, srv)
	for line := range strings.SplitSeq(page, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("/metrics %s: got %q, want an integer", name, v)
			}
			return n
		}
	}
	t.Fatalf("/metrics: got %d with no %s line", status, name)
	return 0
}

// A second database's first start in the same directory leaves the first
// one's zuliprc alone and says where its own credentials went.
func TestBootstrap_ASecondDatabaseLeavesTheFirstZuliprcAlone(t *testing.T) {
	bin := e2eBuildBinary(t)
	dir := t.TempDir()
	first := e2eStartServer(t, bin, filepath.Join(dir, "a.db"))
	first.stop()
	before, err := os.ReadFile(filepath.Join(dir, "zuliprc"))
	if err != nil || !strings.Contains(string(before), "key="+first.ownerKey) {
		t.Fatalf("first zuliprc: %v, or it lacks the first owner's key", err)
	}
	second := e2eStartServer(t, bin, filepath.Join(dir, "b.db"))
	second.stop()
	if after, err := os.ReadFile(filepath.Join(dir, "zuliprc")); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the first zuliprc changed (%v)", err)
	}
	own, err := os.ReadFile(filepath.Join(dir, "b.db.zuliprc"))
	if err != nil || !strings.Contains(string(own), "key="+second.ownerKey) {
		t.Errorf("b.db.zuliprc: %v, or it lacks the second owner's key", err)
	}
	if out := second.output(); !strings.Contains(out, "These credentials are also in "+filepath.Join(dir, "b.db.zuliprc")) {
		t.Errorf("the second start does not say where its credentials went")
	}
}

// Listening on every address, the URL given to clients is one they can
// use, not http://[::]:PORT.
func TestReachableAddr_NeverTheUnspecifiedAddress(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:0", "[::]:0"} {
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			t.Skipf("listen %s: %v", listen, err)
		}
		got := reachableAddr(ln.Addr())
		ln.Close()
		host, _, err := net.SplitHostPort(got)
		if ip := net.ParseIP(host); err != nil || host == "" || (ip != nil && ip.IsUnspecified()) {
			t.Errorf("listening on %s: got %q, want a name or an address clients can reach", listen, got)
		}
	}
}

// Revoking an account's keys or deactivating it ends its event queues
// and their waiting polls at once: a long poll does not outlive its key
// and deliver what is sent afterwards (issue 11, item 6).
func TestRevocation_EndsTheAccountsWaitingPolls(t *testing.T) {
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	srv := e2eStartServer(t, bin, db)
	defer srv.stop()
	owner := e2eNewClient(srv.baseURL, srv.ownerEmail, srv.ownerKey)
	plain := e2ePython
	if status, body, _ := owner.do(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"general"}]`}}, plain); status != 200 {
		t.Fatalf("subscribe: %d %v", status, body["msg"])
	}
	for _, revoke := range []string{"key", "deactivate"} {
		t.Run(revoke, func(t *testing.T) {
			email := revoke + "@example.com"
			r := e2eRunCLI(t, bin, "user", "add", email, "--db", db)
			r.wantOK(t, "user add")
			alice := e2eNewClient(srv.baseURL, email, strings.TrimSpace(r.stdout))
			if status, body, _ := alice.do(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"general"}]`}}, plain); status != 200 {
				t.Fatalf("subscribe: %d %v", status, body["msg"])
			}
			status, reg, _ := alice.do(t, http.MethodPost, "/api/v1/register", url.Values{"event_types": {`["message"]`}}, plain)
			if status != 200 {
				t.Fatalf("register: %d", status)
			}
			queue, _ := reg["queue_id"].(string)
			type answer struct {
				status int
				body   map[string]any
			}
			polled := make(chan answer, 1)
			go func() {
				status, body, _ := alice.do(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {queue}, "last_event_id": {"-1"}}, plain)
				polled <- answer{status, body}
			}()
			time.Sleep(300 * time.Millisecond) // the poll waits
			e2eRunCLI(t, bin, "user", revoke, email, "--db", db).wantOK(t, "user "+revoke)
			owner.do(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"after the " + revoke}}, plain)
			select {
			case a := <-polled:
				if a.status == 200 {
					t.Errorf("the poll answered 200 with %v after user %s; want it ended", a.body["events"], revoke)
				} else if a.body["code"] != "BAD_EVENT_QUEUE_ID" {
					t.Errorf("the poll: got %d %v, want BAD_EVENT_QUEUE_ID", a.status, a.body["code"])
				}
			case <-time.After(5 * time.Second):
				t.Errorf("the poll still waits 5 s after user %s", revoke)
			}
		})
	}
}

// One member's costly flag narrows delay only that member: another
// user's sends stay quick while four of them run, and a narrow past the
// bounds is refused at once (issue 11, item 1). The channel's history is
// written through the store before the binary starts.
func TestHostileNarrows_OtherUsersSendsStayQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a channel of 20,000 messages")
	}
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	st, err := openStore(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	st.db.NoSync = true
	mallory, malloryKey := mustCreateUser(t, st, "mallory@example.com", roleMember, false)
	bob, bobKey := mustCreateUser(t, st, "bob@example.com", roleMember, false)
	ch := mustCreateChannel(t, st, "general", false)
	mustSubscribe(t, st, mallory, "general")
	mustSubscribe(t, st, bob, "general")
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 2500 {
				if _, err := st.sendMessage(bob, channelRef{ID: ch.ID}, "t"+strconv.Itoa(i%50), "message "+strconv.Itoa(w*2500+i), "test"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	srv := e2eRestartServer(t, bin, db) // with the default rate limits, as a server runs
	defer srv.stop()
	attacker := e2eNewClient(srv.baseURL, mallory.Email, malloryKey)
	sender := e2eNewClient(srv.baseURL, bob.Email, bobKey)
	narrow := func(terms int) string {
		var b strings.Builder
		b.WriteString(`[{"operator":"channel","operand":"general"}`)
		for i := range terms - 2 {
			fmt.Fprintf(&b, `,{"operator":"search","operand":"x%d","negated":true}`, i)
		}
		b.WriteString(`,{"operator":"search","operand":"never there"}]`)
		return b.String()
	}
	flagNarrow := func(terms int) url.Values {
		return url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"5000"}, "narrow": {narrow(terms)}, "op": {"add"}, "flag": {"starred"}}
	}
	if status, body, _ := attacker.do(t, http.MethodPost, "/api/v1/messages/flags/narrow", flagNarrow(9000), e2ePython); status != 400 || body["msg"] != "narrow has too many terms (limit: 20)" {
		t.Errorf("a narrow of 9000 terms: got %d %v, want 400 and the limit", status, body["msg"])
	}
	send := func() time.Duration {
		start := time.Now()
		status, body, _ := sender.do(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"hello"}}, e2ePython)
		if status != 200 {
			t.Fatalf("send: %d %v", status, body["msg"])
		}
		return time.Since(start)
	}
	var idle []time.Duration
	for range 10 {
		idle = append(idle, send())
	}
	stop := make(chan struct{})
	var attacks sync.WaitGroup
	for _, terms := range []int{20, 20, 20, 20} { // the costliest narrow within the bounds (past them, it is refused, above)
		params := flagNarrow(terms) // built once: the attacker's own work is not the server's
		attacks.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				attacker.do(t, http.MethodPost, "/api/v1/messages/flags/narrow", params, e2ePython)
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	var busy []time.Duration
	for range 10 {
		busy = append(busy, send())
	}
	close(stop)
	attacks.Wait()
	slices.Sort(idle)
	slices.Sort(busy)
	t.Logf("another user's send: median %v idle, %v while four costly narrows run (slowest %v)", idle[5], busy[5], busy[9])
	if busy[9] > 2*time.Second {
		t.Errorf("a send took %v while the narrows ran, want well under 2 s", busy[9])
	}
}

// Names that show nothing, or that Zulip refuses, are refused as Zulip
// words it; an error repeats at most a short prefix of what was sent
// (issue 11, item 8).
func TestNames_InvisibleAndRefusedCharacters(t *testing.T) {
	e := newTestEnv(t)
	for _, c := range []struct{ name, msg string }{
		{"\u200b", "Channel name can't be empty."},
		{" \u200d\u2060 ", "Channel name can't be empty."},
		{`a\u0007b`, "Invalid character in channel name, at position 2."}, // JSON-escaped: a raw control character is not valid JSON
	} {
		r := e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"` + c.name + `"}]`}}, &e.alice)
		wantAPIError(t, r, 400, "BAD_REQUEST", c.msg)
	}
	for _, c := range []struct{ name, msg string }{
		{"\u200b\u200b", "Name too short!"},
		{"Mallory*", "Invalid characters in name!"},
		{"@all", "Invalid characters in name!"},
		{"Alice|15", "Invalid format!"},
		{strings.Repeat("n", 101), "Name too long!"},
	} {
		r := e.request(t, http.MethodPost, "/api/v1/users", url.Values{"email": {"new@example.com"}, "password": {"a long password"}, "full_name": {c.name}}, &e.owner)
		wantAPIError(t, r, 400, "BAD_REQUEST", c.msg)
	}
	if users, err := e.st.users(); err != nil || len(users) != 5 {
		t.Errorf("accounts after refused names: got %d (%v), want the 5 there were", len(users), err)
	}
	long := strings.Repeat("x", 5000)
	r := e.request(t, http.MethodGet, "/api/v1/messages", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"1"}, "narrow": {`[{"operator":"channel","operand":"` + long + `"}]`}}, &e.alice)
	if r.status != 400 || len(r.str("msg")) > 300 {
		t.Errorf("a 5000-character operand: got %d and a %d-byte message, want 400 and a short one", r.status, len(r.str("msg")))
	}
	r = e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {long}, "topic": {"t"}, "content": {"x"}}, &e.alice)
	if r.status != 400 || len(r.str("msg")) > 300 {
		t.Errorf("a 5000-character channel name: got %d and a %d-byte message, want 400 and a short one", r.status, len(r.str("msg")))
	}
}

// One member can no longer create channels without end: Zulip's
// organisation setting decides who may (members, by default; an
// administrator may restrict it), a request creates at most 100, an
// account at most 200 an hour, and the server holds at most
// --max-channels; each refusal creates nothing (issue 11, item 2).
func TestChannelCreation_PolicyAndBounds(t *testing.T) {
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	srv := e2eStartServer(t, bin, db, "--max-channels", "250")
	defer srv.stop()
	owner := e2eNewClient(srv.baseURL, srv.ownerEmail, srv.ownerKey)
	r := e2eRunCLI(t, bin, "user", "add", "mallory@example.com", "--db", db)
	r.wantOK(t, "user add")
	mallory := e2eNewClient(srv.baseURL, "mallory@example.com", strings.TrimSpace(r.stdout))
	channels := func() int {
		status, body, _ := owner.do(t, http.MethodGet, "/api/v1/streams", url.Values{"include_all": {"true"}}, e2ePython)
		if status != 200 {
			t.Fatalf("GET /streams: %d", status)
		}
		return len(body["streams"].([]any))
	}
	subscribe := func(c *client, first, n int) (int, map[string]any) {
		var names []string
		for i := range n {
			names = append(names, fmt.Sprintf(`{"name":"c%d"}`, first+i))
		}
		status, body, _ := c.do(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {"[" + strings.Join(names, ",") + "]"}}, e2ePython)
		return status, body
	}
	// Per request.
	if status, body := subscribe(mallory, 0, 101); status != 400 || body["msg"] != "Too many new channels in one request (limit: 100)." {
		t.Errorf("101 new channels: got %d %v", status, body["msg"])
	}
	if n := channels(); n != 0 {
		t.Fatalf("after a refused request: %d channels, want 0", n)
	}
	// Per hour: 200, then a 429.
	for i := range 2 {
		if status, body := subscribe(mallory, i*100, 100); status != 200 {
			t.Fatalf("100 new channels (%d): got %d %v", i, status, body["msg"])
		}
	}
	if status, body := subscribe(mallory, 200, 1); status != 429 || body["code"] != "RATE_LIMIT_HIT" {
		t.Errorf("the 201st channel within the hour: got %d %v, want 429", status, body["code"])
	}
	// The server's bound: 250 in all.
	if status, body := subscribe(owner, 300, 50); status != 200 {
		t.Fatalf("the owner's 50: got %d %v", status, body["msg"])
	}
	if status, body := subscribe(owner, 400, 1); status != 400 || !strings.Contains(fmt.Sprint(body["msg"]), "holds its most channels (250)") {
		t.Errorf("the 251st channel: got %d %v", status, body["msg"])
	}
	if n := channels(); n != 250 {
		t.Errorf("channels: got %d, want 250", n)
	}
	// The organisation's setting: only administrators may create public channels.
	status, body, _ := owner.do(t, http.MethodPatch, "/api/v1/realm", url.Values{"can_create_public_channel_group": {fmt.Sprintf(`{"new":%d}`, groupAdministrators)}}, e2ePython)
	if status != 200 {
		t.Fatalf("PATCH /realm: %d %v", status, body["msg"])
	}
	if status, body, _ := mallory.do(t, http.MethodPatch, "/api/v1/realm", url.Values{"can_create_public_channel_group": {fmt.Sprintf(`{"new":%d}`, groupMembers)}}, e2ePython); status != 400 || body["msg"] != "Must be an organization administrator" {
		t.Errorf("PATCH /realm by a member: got %d %v", status, body["msg"])
	}
	status, reg, _ := mallory.do(t, http.MethodPost, "/api/v1/register", url.Values{"fetch_event_types": {`["realm"]`}}, e2ePython)
	if status != 200 || fmt.Sprint(reg["realm_can_create_public_channel_group"]) != strconv.Itoa(groupAdministrators) {
		t.Errorf("register: got %d, realm_can_create_public_channel_group %v", status, reg["realm_can_create_public_channel_group"])
	}
	status, body, _ = owner.do(t, http.MethodPatch, "/api/v1/realm", url.Values{"can_create_public_channel_group": {fmt.Sprintf(`{"new":%d}`, groupNobody)}}, e2ePython)
	if status != 200 {
		t.Fatalf("PATCH /realm to nobody: %d %v", status, body["msg"])
	}
	if status, body, _ := owner.do(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"c0"},{"name":"fresh"}]`}}, e2ePython); status != 400 || body["msg"] != "Insufficient permission" {
		t.Errorf("creating a public channel when nobody may: got %d %v, want Insufficient permission", status, body["msg"])
	}
	if n := channels(); n != 250 {
		t.Errorf("channels after the refusal: got %d, want 250", n)
	}
	if status, body, _ := mallory.do(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"c0"}]`}}, e2ePython); status != 200 {
		t.Errorf("joining an existing channel after the restriction: got %d %v", status, body["msg"])
	}
}

// Issue 28: a stranger who sends request headers and then a body that
// never comes holds no connection slot against a member: a request is
// being served (and safe from eviction) only once it has all arrived,
// and a body sent without credentials gets a short deadline of its own.
func TestMaxConnections_StrangersSlowBodiesGiveWay(t *testing.T) {
	t.Parallel() // it mostly waits for the strangers' deadline
	bin := e2eBuildBinary(t)
	for _, tc := range []struct {
		name  string
		flags []string
		perIP int // connections from each of four addresses: each one's share
	}{
		{"bound of 64", []string{"--max-connections", "64"}, 16},
		{"default bound", nil, conns.DefaultMax / 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := e2eStartServer(t, bin, filepath.Join(t.TempDir(), "z.db"), tc.flags...)
			defer srv.stop()
			addr := strings.TrimPrefix(srv.baseURL, "http://")
			slowBody := []byte("POST /accounts/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n")
			held := connectFrom(t, addr, 2, 5, tc.perIP, func(c net.Conn) {
				if _, err := c.Write(slowBody); err != nil {
					t.Fatalf("write from %s: %v", c.LocalAddr(), err)
				}
			})
			start := time.Now()
			time.Sleep(300 * time.Millisecond) // the handlers have started, waiting for the bodies

			// A member's request gets through, on new connections, again and again.
			for i := range 5 {
				c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
				req, _ := http.NewRequest(http.MethodGet, srv.baseURL+"/api/v1/users/me", nil)
				req.SetBasicAuth(srv.ownerEmail, srv.ownerKey)
				resp, err := c.Do(req)
				if err != nil {
					t.Fatalf("a member's request %d among the slow bodies: got %v, want 200", i, errors.Unwrap(err))
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("a member's request %d among the slow bodies: got %d, want 200", i, resp.StatusCode)
				}
			}

			// Every stranger's connection is over well before --read-timeout
			// (60 s): closed for room, or its body's own deadline passed.
			limit := start.Add(conns.StrangerBodyWait + 5*time.Second)
			for i, c := range held {
				c.SetReadDeadline(limit)
				if _, err := io.Copy(io.Discard, c); errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("stranger's connection %d: still open %v after its headers (%v), want it closed within %v", i, time.Since(start).Round(time.Second), err, conns.StrangerBodyWait)
				}
			}
		})
	}
}

// Issue 28: one member polling one queue from many connections holds
// one waiting poll, not a connection slot each: as in Zulip, a newer
// poll on a queue answers the one waiting before it, whose connection
// is then quiet and may be closed for room.
func TestMaxConnections_ANewerPollAnswersTheOneWaitingOnItsQueue(t *testing.T) {
	bin := e2eBuildBinary(t)
	srv := e2eStartServer(t, bin, filepath.Join(t.TempDir(), "z.db"), "--max-connections", "64")
	defer srv.stop()
	addr := strings.TrimPrefix(srv.baseURL, "http://")
	member := func() (int, map[string]any) { // on a new connection each time
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
		return ownerCall(c, srv.baseURL, srv, http.MethodPost, "/api/v1/register", url.Values{"event_types": {`["message"]`}})
	}
	code, reg := member()
	queue, _ := reg["queue_id"].(string)
	if code != 200 || queue == "" {
		t.Fatalf("register: got %d, want 200 with a queue_id", code)
	}
	poll := rawPoll(srv, queue)

	// 5 addresses × 20 connections, each polling the same queue, one
	// after the other, as a client retrying.
	polls := connectFrom(t, addr, 2, 6, 20, func(c net.Conn) {
		c.Write(poll)
		time.Sleep(2 * time.Millisecond)
	})
	time.Sleep(300 * time.Millisecond)

	// Every other client is still served.
	for i := range 5 {
		if code, _ := member(); code != 200 {
			t.Fatalf("another request %d while one queue is polled from 100 connections: got %d, want 200", i, code)
		}
	}
	// At most one poll still waits: each of the others was answered
	// (events [], as Zulip answers the poll a newer one replaced) or its
	// connection, quiet once answered, was closed for room.
	answers := make([]chan []byte, len(polls)) // nil: still waiting
	for i, c := range polls {
		answers[i] = make(chan []byte, 1)
		go func() {
			c.SetReadDeadline(time.Now().Add(time.Second))
			b, err := io.ReadAll(c)
			if errors.Is(err, os.ErrDeadlineExceeded) && len(b) == 0 {
				b = nil
			}
			answers[i] <- b
		}()
	}
	waiting := 0
	for _, answer := range answers {
		b := <-answer
		if b == nil {
			waiting++
		} else if len(b) > 0 && (!bytes.HasPrefix(b, []byte("HTTP/1.1 200 ")) || !bytes.Contains(b, []byte(`"events":[]`))) {
			t.Errorf("a replaced poll's answer: got %q, want 200 with events []", firstLine(string(b)))
		}
	}
	if waiting > 1 {
		t.Errorf("polls still waiting on the queue: got %d, want 1", waiting)
	}
}

// Over HTTP/2 every request has a body, an empty one for a GET: a
// member's long poll there is still being served, and strangers who
// connect by the bound's worth do not cut it off. And a stranger who
// asks for a large public answer and never reads it holds no slot
// against a member.
func TestMaxConnections_AMembersHTTP2PollLivesAndStrangersReadingNothingGiveWay(t *testing.T) {
	bin := e2eBuildBinary(t)
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	srv := e2eStartServer(t, bin, filepath.Join(dir, "z.db"), "--max-connections", "64", "--tls-cert", certFile, "--tls-key", keyFile)
	defer srv.stop()
	base := "https://" + strings.TrimPrefix(srv.baseURL, "http://")
	addr := strings.TrimPrefix(srv.baseURL, "http://")
	h2 := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	call := func(method, path string, params url.Values) (int, map[string]any) {
		return ownerCall(h2, base, srv, method, path, params)
	}
	_, reg := call(http.MethodPost, "/api/v1/register", url.Values{"event_types": {`["message"]`}})
	queue, _ := reg["queue_id"].(string)
	if code, _ := call(http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"general"}]`}}); code != 200 || queue == "" {
		t.Fatalf("register and subscribe: got %d and queue %q", code, queue)
	}
	polled := make(chan error, 1)
	go func() { // the member's poll, over HTTP/2 on a connection of its own
		c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/events?"+url.Values{"queue_id": {queue}, "last_event_id": {"-1"}}.Encode(), nil)
		req.SetBasicAuth(srv.ownerEmail, srv.ownerKey)
		resp, err := c.Do(req)
		if err == nil {
			if resp.ProtoMajor != 2 {
				err = fmt.Errorf("answered over %s, want HTTP/2", resp.Proto)
			} else if _, err = io.ReadAll(resp.Body); err == nil && resp.StatusCode != 200 {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
			resp.Body.Close()
		}
		polled <- err
	}()
	time.Sleep(300 * time.Millisecond) // the poll waits

	// Strangers: from four addresses, a share each, every one asking
	// over HTTP/2 for the 60 KB emoji table with a flow-control window of
	// 0, so that its answer can never be sent.
	connectFrom(t, addr, 2, 5, 16, func(raw net.Conn) {
		c := tls.Client(raw, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"h2"}})
		if c.Handshake() != nil {
			return
		}
		c.Write([]byte(http2.ClientPreface))
		fr := http2.NewFramer(c, c)
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
		var block bytes.Buffer
		enc := hpack.NewEncoder(&block)
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "127.0.0.1"}, {":path", "/static/generated/emoji/emoji_api.json"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndStream: true, EndHeaders: true})
	})
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-polled:
		t.Fatalf("the member's HTTP/2 poll among 64 strangers: ended with %v, want it still waiting", err)
	default:
	}
	for i := range 3 { // on new connections
		fresh := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/users/me", nil)
		req.SetBasicAuth(srv.ownerEmail, srv.ownerKey)
		resp, err := fresh.Do(req)
		if err != nil {
			t.Fatalf("a member's request %d among strangers reading nothing: got %v, want 200", i, errors.Unwrap(err))
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("a member's request %d among strangers reading nothing: got %d, want 200", i, resp.StatusCode)
		}
	}
	if code, _ := call(http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"wake"}}); code != 200 {
		t.Fatalf("send: got %d, want 200", code)
	}
	select {
	case err := <-polled:
		if err != nil {
			t.Errorf("the member's HTTP/2 poll: got %v, want its answer", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the member's HTTP/2 poll did not answer the send")
	}
}

// Polls that reach one queue at the same moment still leave one waiting:
// a newer poll that arrives while an older one's connection is being
// taken from net/http finds nothing parked to replace, so the older one
// must see it is no longer the newest when it parks.
func TestMaxConnections_SimultaneousPollsOnAQueueLeaveOneWaiting(t *testing.T) {
	bin := e2eBuildBinary(t)
	srv := e2eStartServer(t, bin, filepath.Join(t.TempDir(), "z.db"), "--rate-limit", "off")
	defer srv.stop()
	addr := strings.TrimPrefix(srv.baseURL, "http://")
	_, reg := ownerCall(http.DefaultClient, srv.baseURL, srv, http.MethodPost, "/api/v1/register", url.Values{"event_types": {`["message"]`}})
	queue, _ := reg["queue_id"].(string)
	poll := rawPoll(srv, queue)
	most := int64(0)
	for round := range 10 {
		conns := make([]net.Conn, 40)
		for i := range conns {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			conns[i] = c
		}
		var start, sent sync.WaitGroup
		start.Add(1)
		for _, c := range conns {
			sent.Go(func() {
				start.Wait()
				c.Write(poll)
			})
		}
		start.Done()
		sent.Wait()
		time.Sleep(300 * time.Millisecond)
		n := e2eMetric(t, srv, "zulite_parked_polls")
		most = max(most, n)
		for _, c := range conns {
			c.Close()
		}
		if n > 1 {
			t.Errorf("round %d: %d polls parked on one queue after 40 arrived at once, want 1", round, n)
			break
		}
	}
	t.Logf("most polls parked on the queue at once: %d", most)
}

// connectFrom opens each connections to addr from every address
// 127.0.0.first to 127.0.0.last, hands each to send, and closes them
// when the test ends; a dial refused is left out.
func connectFrom(t *testing.T, addr string, first, last, each int, send func(net.Conn)) []net.Conn {
	t.Helper()
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := first; i <= last; i++ {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0." + strconv.Itoa(i))}, Timeout: 2 * time.Second}
		for range each {
			c, err := d.Dial("tcp", addr)
			if err != nil {
				continue
			}
			conns = append(conns, c)
			send(c)
		}
	}
	return conns
}

// rawPoll is the owner's long poll on a queue, as bytes on the wire.
func rawPoll(srv *e2eServer, queue string) []byte {
	return []byte("GET /api/v1/events?queue_id=" + url.QueryEscape(queue) + "&last_event_id=-1 HTTP/1.1\r\nHost: x\r\nAuthorization: Basic " +
		base64.StdEncoding.EncodeToString([]byte(srv.ownerEmail+":"+srv.ownerKey)) + "\r\n\r\n")
}

// ownerCall is one API call as the server's owner through c to base,
// answering the status (0 when no answer came) and the body.
func ownerCall(c *http.Client, base string, srv *e2eServer, method, path string, params url.Values) (int, map[string]any) {
	req, _ := http.NewRequest(method, base+path, strings.NewReader(params.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(srv.ownerEmail, srv.ownerKey)
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}
