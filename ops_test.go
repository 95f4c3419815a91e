package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/acme"
)

func addrFrom(t *testing.T, stderr *syncBuffer, msg string) string {
	t.Helper()
	re := regexp.MustCompile(regexp.QuoteMeta(msg) + `.*?"?addr"?[=:]"?(127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %q line with an address in: %s", msg, stderr)
	return ""
}

func ownerKeyFrom(stdout *syncBuffer) string {
	return strings.TrimPrefix(regexp.MustCompile(`key: [A-Za-z0-9]{32}`).FindString(stdout.String()), "key: ")
}

func get(t *testing.T, client *http.Client, url, email, key string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if email != "" {
		req.SetBasicAuth(email, key)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp.StatusCode, string(body), resp.Header
}

func TestLogs_OneJSONLinePerRequestWithoutSecrets(t *testing.T) {
	db := filepath.Join(t.TempDir(), "z.db")
	stdout, stderr, stop := startServe(t, db, nil, "--log-format", "json")
	base := "http://" + addrFrom(t, stderr, `"msg":"listening"`)
	key := ownerKeyFrom(stdout)
	code, _, hdr := get(t, http.DefaultClient, base+"/api/v1/users/me", "owner@zulite.localhost", key)
	get(t, http.DefaultClient, base+"/api/v1/nope", "", "")
	if code != 200 || hdr.Get("X-Request-Id") == "" {
		t.Fatalf("users/me: %d, X-Request-Id %q", code, hdr.Get("X-Request-Id"))
	}
	if err := stop(); err != nil { // the log is read whole once serve has returned
		t.Fatalf("serve: %v", err)
	}
	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		if entry["msg"] == "request" {
			lines = append(lines, entry)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("request lines: got %d, want 2", len(lines))
	}
	me := lines[0]
	if me["method"] != "GET" || me["route"] != "GET /api/v1/users/me" || me["status"] != 200.0 || me["user_id"] != 1.0 || me["request_id"] != hdr.Get("X-Request-Id") || me["duration"] == nil {
		t.Errorf("users/me line: got %v", me)
	}
	if lines[1]["route"] != "/" || lines[1]["status"] != 404.0 {
		t.Errorf("404 line: got %v", lines[1])
	}
	if strings.Contains(stderr.String(), key) || strings.Contains(stderr.String(), "Basic ") {
		t.Errorf("the log holds a key or an Authorization header")
	}
	for _, want := range []string{`"msg":"listening"`, `"msg":"shutting down"`, `"msg":"stopped"`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("lifecycle: no %s line", want)
		}
	}
}

// metricLine is one sample of Prometheus's text format.
var metricLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*",?)*\})? (-?[0-9.eE+-]+|\+Inf|NaN)$`)

func TestHealthAndMetrics(t *testing.T) {
	db := filepath.Join(t.TempDir(), "z.db")
	stdout, stderr, _ := startServe(t, db, nil, "--metrics-addr", "127.0.0.1:0")
	base := "http://" + addrFrom(t, stderr, "msg=listening")
	metricsBase := "http://" + addrFrom(t, stderr, `msg="metrics listening"`)
	key := ownerKeyFrom(stdout)
	if code, body, _ := get(t, http.DefaultClient, base+"/health", "", ""); code != 200 || body != `{"result":"success","msg":""}`+"\n" {
		t.Errorf("health: got %d %q", code, body)
	}
	if code, _, _ := get(t, http.DefaultClient, base+"/metrics", "", ""); code != 401 {
		t.Errorf("metrics on the API address without credentials: got %d, want 401", code)
	}
	mustRunCLI(t, nil, "user", "add", "member@example.com", "--db", db)
	get(t, http.DefaultClient, base+"/api/v1/users/me", "owner@zulite.localhost", key)
	mustRunCLI(t, nil, "channel", "add", "general", "--db", db) // a commit through the socket
	// A request is counted once its answer is written: the client may
	// read the answer a moment before that.
	var code int
	var text string
	var hdr http.Header
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if code, text, hdr = get(t, http.DefaultClient, metricsBase+"/metrics", "", ""); strings.Contains(text, `route="GET /api/v1/users/me",status="200"`) {
			break
		}
	}
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics on its own address: got %d %q", code, hdr.Get("Content-Type"))
	}
	if code, same, _ := get(t, http.DefaultClient, base+"/metrics", "owner@zulite.localhost", key); code != 200 || !strings.Contains(same, "zulite_http_requests_total") {
		t.Errorf("metrics on the API address for the owner: got %d", code)
	}
	samples := map[string]float64{}
	typed := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if strings.HasPrefix(line, "# TYPE ") {
			f := strings.Fields(line)
			typed[f[2]] = f[3]
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		m := metricLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not a Prometheus sample: %q", line)
		}
		v, err := strconv.ParseFloat(m[5], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		samples[line[:strings.LastIndex(line, " ")]] = v
	}
	if v := samples[`zulite_http_requests_total{route="GET /api/v1/users/me",status="200"}`]; v != 1 {
		t.Errorf("users/me requests: got %v, want 1", v)
	}
	if samples[`zulite_http_request_duration_seconds_count{route="GET /api/v1/users/me"}`] != 1 || samples[`zulite_http_request_duration_seconds_bucket{route="GET /api/v1/users/me",le="+Inf"}`] != 1 {
		t.Errorf("users/me latency histogram is missing or wrong")
	}
	if samples["zulite_commit_group_writes_count"] < 1 || samples["zulite_commit_duration_seconds_count"] < 1 {
		t.Errorf("commit metrics: groups %v", samples["zulite_commit_group_writes_count"])
	}
	if samples["zulite_database_pages_written_total"] < samples["zulite_commit_group_writes_count"] {
		t.Errorf("pages written %v: want at least one a commit (%v commits)", samples["zulite_database_pages_written_total"], samples["zulite_commit_group_writes_count"])
	}
	if samples["zulite_database_bytes"] <= 0 || samples["zulite_open_connections"] < 1 {
		t.Errorf("database bytes %v, open connections %v", samples["zulite_database_bytes"], samples["zulite_open_connections"])
	}
	for name, kind := range map[string]string{"zulite_http_requests_total": "counter", "zulite_http_request_duration_seconds": "histogram", "zulite_commit_group_writes": "histogram", "zulite_database_bytes": "gauge", "zulite_database_pages_written_total": "counter", "zulite_open_connections": "gauge"} {
		if typed[name] != kind {
			t.Errorf("# TYPE %s: got %q, want %s", name, typed[name], kind)
		}
	}
	// Pushes are off here: their series are there at zero all the same,
	// as Prometheus prefers to series that appear once pushes are on.
	for name, kind := range map[string]string{"zulite_push_queued_total": "counter", "zulite_push_sent_total": "counter", "zulite_push_failed_total": "counter", "zulite_push_dropped_total": "counter", "zulite_push_outbox_entries": "gauge"} {
		if v, ok := samples[name]; !ok || v != 0 || typed[name] != kind {
			t.Errorf("%s with pushes off: got %v (present: %v), # TYPE %q; want 0, a %s", name, v, ok, typed[name], kind)
		}
	}
}

// selfSigned makes a certificate for 127.0.0.1 and writes it and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "zulite test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestTLS_ServesWithACertificateFromFiles(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	_, stderr, _ := startServe(t, filepath.Join(dir, "z.db"), nil, "--tls-cert", certFile, "--tls-key", keyFile)
	addr := addrFrom(t, stderr, "msg=listening")
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	code, body, _ := get(t, client, "https://"+addr+"/api/v1/server_settings", "", "")
	if code != 200 || !strings.Contains(body, `"realm_url":"https://`+addr+`"`) {
		t.Errorf("over TLS: got %d %s, want realm_url https://%s", code, body, addr)
	}
	if resp, err := http.Get("http://" + addr + "/api/v1/server_settings"); err == nil {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("plain HTTP on the TLS port: read body: %v", err)
		}
		if strings.Contains(string(body), "realm_url") {
			t.Errorf("plain HTTP on the TLS port was served the API")
		}
	}
}

func TestACME_WiringWithoutNetwork(t *testing.T) {
	dir := t.TempDir()
	o := options{DB: filepath.Join(dir, "z.db"), ACMEDomain: "chat.example.com, zulip.example.org"}
	config, err := serverTLS(o)
	if err != nil {
		t.Fatal(err)
	}
	if config.GetCertificate == nil || !slices.Contains(config.NextProtos, acme.ALPNProto) || config.MinVersion != tls.VersionTLS12 {
		t.Errorf("TLS config: GetCertificate set %v, NextProtos %v, MinVersion %x", config.GetCertificate != nil, config.NextProtos, config.MinVersion)
	}
	m, err := acmeManager(o.ACMEDomain, "", o.DB)
	if err != nil {
		t.Fatal(err)
	}
	for host, ok := range map[string]bool{"chat.example.com": true, "zulip.example.org": true, "evil.example.com": false} {
		if err := m.HostPolicy(context.Background(), host); (err == nil) != ok {
			t.Errorf("host policy for %s: got %v, want allowed %v", host, err, ok)
		}
	}
	cache := filepath.Join(dir, "acme-cache")
	if fi, err := os.Stat(cache); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("cache directory: %v", err)
	}
	if err := m.Cache.Put(context.Background(), "probe", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cache, "probe")); err != nil {
		t.Errorf("the manager does not keep its certificates in %s: %v", cache, err)
	}
	if _, err := acmeManager(" , ", "", o.DB); err == nil {
		t.Errorf("an empty domain list: got nil error")
	}
	for addr, warn := range map[string]bool{"127.0.0.1": false, "::1": false, "192.0.2.1": true, "0.0.0.0": true} {
		if got := plainHTTPWarning(&net.TCPAddr{IP: net.ParseIP(addr)}, false) != ""; got != warn {
			t.Errorf("plain HTTP on %s: warning %v, want %v", addr, got, warn)
		}
		if plainHTTPWarning(&net.TCPAddr{IP: net.ParseIP(addr)}, true) != "" {
			t.Errorf("TLS on %s: a warning, want none", addr)
		}
	}
}

func TestServeHelp_ListsEveryFlagWithItsEnvironmentVariableAndDefault(t *testing.T) {
	var out, errOut strings.Builder
	if err := run(context.Background(), []string{"serve", "--help"}, func(string) string { return "" }, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("serve --help: got %v, want success", err)
	}
	help := out.String() // asked for, the help is the answer: on stdout
	for _, flagName := range []string{"db", "addr", "url", "realm-name", "owner-email", "event-queue-timeout", "rate-limit", "read-header-timeout", "read-timeout", "log-format", "metrics-addr", "tls-cert", "tls-key", "acme-domain", "acme-cache", "max-connections", "trusted-proxies"} {
		env := "ZULITE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
		if !strings.Contains(help, "-"+flagName) || !strings.Contains(help, env) {
			t.Errorf("serve --help lacks -%s or %s", flagName, env)
		}
	}
	for _, def := range []string{"127.0.0.1:9991", "zulite.db", "60:200,3600:2000", "10m0s", `"text"`} {
		if !strings.Contains(help, def) {
			t.Errorf("serve --help lacks the default %s", def)
		}
	}
}

func TestVersion_OfTheBuiltBinaryCarriesBuildDetails(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	r := e2eRunCLI(t, e2eBuildBinary(t), "version")
	for _, want := range []string{"zulite ", "feature level 421", runtime.Version(), "linux/" + runtime.GOARCH, "static"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("version: got %q, want it to hold %q", r.stdout, want)
		}
	}
}

// The real binary runs its collector at GOGC=200 unless the environment
// says otherwise, and /metrics reports the one in force (-1 for off).
func TestGC_TheBinaryDefaultsToGOGC200UnlessTheEnvironmentSetsIt(t *testing.T) {
	bin := e2eBuildBinary(t)
	for _, c := range []struct{ env, want string }{{"", "200"}, {"150", "150"}, {"off", "-1"}} {
		t.Setenv("GOGC", c.env) // the child's environment; "" is unset to Go's runtime
		srv := e2eStartServer(t, bin, filepath.Join(t.TempDir(), "z.db"))
		code, text, _ := get(t, http.DefaultClient, srv.baseURL+"/metrics", srv.ownerEmail, srv.ownerKey)
		if code != 200 {
			t.Fatalf("GOGC=%q: /metrics answered %d", c.env, code)
		}
		if !strings.Contains(text, "\ngo_gc_gogc_percent "+c.want+"\n") {
			t.Errorf("GOGC=%q: want go_gc_gogc_percent %s in\n%s", c.env, c.want, text)
		}
		srv.stop()
	}
}

// Under TLS every answer tells browsers to come back over HTTPS only,
// for a year (Strict-Transport-Security, as Zulip's nginx sends it):
// pages, API successes and errors, over HTTP/1.1 and HTTP/2, and a long
// poll answered after it was parked. Over plain HTTP no answer carries
// it (issue 28, item 7).
func TestTLS_EveryAnswerCarriesStrictTransportSecurity(t *testing.T) {
	bin := e2eBuildBinary(t)
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	h1 := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	h2 := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	type answer struct {
		status int
		proto  string
		hsts   string
	}
	send := func(c *http.Client, method, target, email, key string, params url.Values) answer {
		t.Helper()
		req, err := http.NewRequest(method, target, strings.NewReader(params.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if email != "" {
			req.SetBasicAuth(email, key)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return answer{resp.StatusCode, resp.Proto, resp.Header.Get("Strict-Transport-Security")}
	}
	requests := []struct {
		method, path string
		auth         bool
		status       int
	}{
		{"GET", "/", false, 200},
		{"GET", "/api/v1/server_settings", false, 200},
		{"GET", "/api/v1/users/me", true, 200},
		{"GET", "/api/v1/users/me", false, 401},
		{"GET", "/api/v1/nowhere", false, 404},
		{"POST", "/api/v1/fetch_api_key", false, 401},
		{"GET", "/health", false, 200},
	}
	const want = "max-age=31536000"

	srv := e2eStartServer(t, bin, filepath.Join(dir, "z.db"), "--tls-cert", certFile, "--tls-key", keyFile)
	base := "https://" + strings.TrimPrefix(srv.baseURL, "http://")
	login := url.Values{"username": {"nobody@example.com"}, "password": {"guess-guess"}}
	for _, c := range []*http.Client{h1, h2} {
		for _, r := range requests {
			email := ""
			if r.auth {
				email = srv.ownerEmail
			}
			got := send(c, r.method, base+r.path, email, srv.ownerKey, login)
			if got.status != r.status || got.hsts != want {
				t.Errorf("%s %s over TLS (%s): got %d with Strict-Transport-Security %q; want %d with %q", r.method, r.path, got.proto, got.status, got.hsts, r.status, want)
			}
		}
	}
	// A long poll over HTTP/1.1 parks; its answer is written later, apart
	// from net/http's.
	owner := &client{base: base, email: srv.ownerEmail, key: srv.ownerKey, http: h1}
	status, body, _ := owner.do(t, http.MethodPost, "/api/v1/register", url.Values{"event_types": {`["message"]`}}, e2ePython)
	e2eWantSuccess(t, "register", status, body)
	queue, _ := body["queue_id"].(string)
	polled := make(chan answer, 1)
	go func() {
		polled <- send(h1, "GET", base+"/api/v1/events?queue_id="+url.QueryEscape(queue)+"&last_event_id=-1", srv.ownerEmail, srv.ownerKey, nil)
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
		req.SetBasicAuth(srv.ownerEmail, srv.ownerKey)
		resp, err := h1.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(page), "\nzulite_parked_polls 1\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the long poll did not park")
		}
	}
	status, body, _ = owner.do(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"direct"}, "to": {`["` + srv.ownerEmail + `"]`}, "content": {"wake up"}}, e2ePython)
	e2eWantSuccess(t, "send", status, body)
	if got := <-polled; got.status != 200 || got.hsts != want {
		t.Errorf("a long poll over TLS: got %d with Strict-Transport-Security %q; want 200 with %q", got.status, got.hsts, want)
	}
	srv.stop()

	plain := e2eStartServer(t, bin, filepath.Join(t.TempDir(), "z.db"))
	for _, r := range requests {
		email := ""
		if r.auth {
			email = plain.ownerEmail
		}
		if got := send(http.DefaultClient, r.method, plain.baseURL+r.path, email, plain.ownerKey, login); got.status != r.status || got.hsts != "" {
			t.Errorf("%s %s over plain HTTP: got %d with Strict-Transport-Security %q; want %d without", r.method, r.path, got.status, got.hsts, r.status)
		}
	}
}

// gatedWriter holds the writes told (by number, from 1) until released,
// counting writes and keeping what they wrote.
type gatedWriter struct {
	mu     sync.Mutex
	writes int
	text   []byte
	gates  map[int]*gate
}

type gate struct{ entered, release chan struct{} }

func newGatedWriter(held ...int) *gatedWriter {
	g := &gatedWriter{gates: map[int]*gate{}}
	for _, n := range held {
		g.gates[n] = &gate{make(chan struct{}), make(chan struct{})}
	}
	return g
}

func (g *gatedWriter) Write(b []byte) (int, error) {
	g.mu.Lock()
	g.writes++
	at := g.gates[g.writes]
	g.text = append(g.text, b...)
	g.mu.Unlock()
	if at != nil {
		close(at.entered)
		<-at.release
	}
	return len(b), nil
}

func (g *gatedWriter) lines() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return bytes.Count(g.text, []byte("\n"))
}

// The request lines queued behind a write under way go out together, in
// one write, whole, and not by the request whose write it was: it goes
// back to its connection. A stuck write holds the queue to its bound.
func TestRequestLog_LinesBehindAWriteGoOutTogether(t *testing.T) {
	out := newGatedWriter(1, 2)
	l := &requestLog{out: out}
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	firstDone := make(chan struct{})
	go func() {
		l.line(at, "GET", "GET /api/v1/events", 200, time.Millisecond, 1, "first")
		close(firstDone)
	}()
	<-out.gates[1].entered // the first line's write is under way and held
	const n = 100
	for i := range n {
		wg.Go(func() { l.line(at, "GET", "GET /api/v1/events", 200, time.Millisecond, uint64(i), "r"+strconv.Itoa(i)) })
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		l.mu.Lock()
		queued := bytes.Count(l.queue, []byte("\n"))
		l.mu.Unlock()
		if queued == n { // every line queued, none waiting to be
			break
		}
	}
	wg.Wait()
	close(out.gates[1].release)
	select {
	case <-firstDone:
	case <-time.After(5 * time.Second):
		t.Errorf("the first line's request was still writing the others' lines 5 s after its own write returned")
	}
	close(out.gates[2].release)
	for deadline := time.Now().Add(5 * time.Second); out.lines() < n+1 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	<-firstDone
	out.mu.Lock()
	writes, text := out.writes, string(out.text)
	out.mu.Unlock()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if writes != 2 || len(lines) != n+1 {
		t.Fatalf("%d lines behind a held write: got %d writes of %d lines, want 2 writes of %d", n, writes, len(lines), n+1)
	}
	seen := map[string]bool{}
	for _, line := range lines {
		id := line[strings.LastIndex(line, "request_id=")+len("request_id="):]
		if !strings.HasPrefix(line, "time=2026-12-02T06:00:00.000Z level=INFO msg=request method=GET route=") || seen[id] {
			t.Fatalf("a line cut, mixed or repeated: %q", line)
		}
		seen[id] = true
	}

	// Behind a write that never returns, requests wait once the queue
	// holds its bound, rather than queueing without end.
	stuck := newGatedWriter(1)
	l = &requestLog{out: stuck}
	wg.Go(func() { l.line(at, "GET", "GET /api/v1/events", 200, time.Millisecond, 1, "first") })
	<-stuck.gates[1].entered
	for range 2 * maxQueuedLog / 100 { // lines of about 130 bytes: twice the bound
		wg.Go(func() { l.line(at, "GET", "GET /api/v1/events", 200, time.Millisecond, 1, "more") })
	}
	queued := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.queue)
	}
	for deadline := time.Now().Add(5 * time.Second); queued() < maxQueuedLog-200 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // time for the others to queue, were they let
	if n := queued(); n > maxQueuedLog+200 {
		t.Errorf("behind a stuck write: %d bytes queued, want at most the bound %d and a line", n, maxQueuedLog)
	}
	close(stuck.gates[1].release)
	wg.Wait()
	for deadline := time.Now().Add(5 * time.Second); stuck.lines() < 1+2*maxQueuedLog/100 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got := stuck.lines(); got != 1+2*maxQueuedLog/100 {
		t.Errorf("after the stuck write returned: %d lines written, want %d", got, 1+2*maxQueuedLog/100)
	}
}
