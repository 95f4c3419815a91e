// Package pushtest runs on loopback the peers internal/push talks to:
// Apple's APNs over HTTP/2 and TLS, checking the ES256 provider token;
// FCM HTTP v1 with its OAuth token exchange, checking the RS256
// assertion; Zulip's push bouncer with zilencer's remotes routes. The
// tests of internal/push and the core's end-to-end push tests share
// them. Each fake records every request it answered, can be told to
// fail one token or to answer everything as a test says, and notes each
// protocol violation for CheckViolations.
//
// Only tests import it, so it never reaches the binary. It imports only
// the standard library: never internal/push (whose own tests import
// it), bbolt or package main.
package pushtest

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is one request a fake answered.
type Request struct {
	Token  string // APNs, FCM: the device token; the bouncer: the route ("push/notify")
	Status int    // what the fake answered
	At     time.Time
	Proto  string
	Path   string
	Header http.Header
	Raw    []byte         // the body as sent
	Body   map[string]any // APNs: the wire payload; FCM: message.data and "(android.priority)"; the bouncer: the form or the JSON

	JWTValid bool // APNs: authorization holds a valid ES256 provider token of the key

	Data     map[string]any // FCM: message.data as sent
	Priority string         // FCM: message.android.priority

	User, Pass string     // the bouncer: the basic authentication
	Form       url.Values // the bouncer: a form's fields
}

// reply is what a test told a fake to answer every request with.
type reply struct {
	status     int    // 0: 200
	text       string // APNs: the reason; FCM, the bouncer: the body
	retryAfter string
}

// recorder holds what every fake shares.
type recorder struct {
	URL    string
	Server *httptest.Server
	name   string // for failures: "APNs"

	mu         sync.Mutex
	requests   []Request
	failNext   map[string]int  // token → answers of 503 still to give
	gone       map[string]bool // token → the provider says it is dead
	told       *reply
	violations []string
}

func newRecorder(name string) recorder {
	return recorder{name: name, failNext: map[string]int{}, gone: map[string]bool{}}
}

// serveOn makes srv, started, the fake's server, closed when the test
// ends.
func (f *recorder) serveOn(t *testing.T, srv *httptest.Server) {
	f.Server, f.URL = srv, srv.URL
	t.Cleanup(srv.Close)
}

// received is r as a Request, its body read.
func received(r *http.Request) Request {
	raw, _ := io.ReadAll(r.Body)
	return Request{Proto: r.Proto, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
}

func (f *recorder) violate(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.violations = append(f.violations, fmt.Sprintf(format, args...))
}

// SetFail makes the next n deliveries to token answer 503.
func (f *recorder) SetFail(token string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext[token] = n
}

// SetGone makes the provider say token is dead.
func (f *recorder) SetGone(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gone[token] = true
}

// Answer makes the fake answer every request from now on (FCM: every
// send) with status (200 when 0) and text, whatever the request holds:
// APNs puts text in an error's {"reason": ...}, FCM answers it as an
// error's body, the bouncer as the body (a success when empty).
// retryAfter, when not empty, goes with each answer as Retry-After.
func (f *recorder) Answer(status int, text, retryAfter string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.told = &reply{status: status, text: text, retryAfter: retryAfter}
}

// answer decides the status of req and records it: what the test told
// the fake to answer, else refused (the refusal req earned; 0: none),
// else 410 for a gone token, 503 for a failure still to give, else 200.
// told is what the test told, or nil.
func (f *recorder) answer(req Request, refused int) (status int, told *reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	status = http.StatusOK
	switch {
	case f.told != nil:
		told = f.told
		if told.status != 0 {
			status = told.status
		}
	case refused != 0:
		status = refused
	case f.gone[req.Token]:
		status = http.StatusGone
	case f.failNext[req.Token] > 0:
		f.failNext[req.Token]--
		status = http.StatusServiceUnavailable
	}
	req.Status, req.At = status, time.Now()
	f.requests = append(f.requests, req)
	return status, told
}

// Sent is what was delivered (answered 200) to token, in order.
func (f *recorder) Sent(token string) []Request {
	return f.Matching(func(r Request) bool { return r.Token == token && r.Status == http.StatusOK })
}

// Matching is every request keep keeps, in order.
func (f *recorder) Matching(keep func(Request) bool) []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Request
	for _, r := range f.requests {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// Last is the last request; none fails the test.
func (f *recorder) Last(t *testing.T) Request {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		t.Fatalf("%s got no request", f.name)
	}
	return f.requests[len(f.requests)-1]
}

// CheckViolations fails the test with each protocol violation seen
// since the last check.
func (f *recorder) CheckViolations(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, v := range f.violations {
		t.Errorf("protocol: %s", v)
	}
	f.violations = nil
}

// KeyPEM is key as a PKCS #8 PEM block.
func KeyPEM(t *testing.T, key any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// WriteKey writes key as Apple hands it out: a PKCS #8 .p8 file.
func WriteKey(t *testing.T, key any) string {
	t.Helper()
	return writeFile(t, "AuthKey.p8", []byte(KeyPEM(t, key)))
}

func writeFile(t *testing.T, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// parseJWT splits a JWT into its header, its claims, the SHA-256 of
// its signed part and its signature; ok is false when it is not one.
func parseJWT(jwt string) (header, claims map[string]any, digest [sha256.Size]byte, sig []byte, ok bool) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 || !decodeJWTPart(parts[0], &header) || !decodeJWTPart(parts[1], &claims) {
		return nil, nil, digest, nil, false
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, nil, digest, nil, false
	}
	return header, claims, sha256.Sum256([]byte(parts[0] + "." + parts[1])), sig, true
}

func decodeJWTPart(s string, v any) bool {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && json.Unmarshal(raw, v) == nil
}
