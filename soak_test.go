package main

import (
	"encoding/base64"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var soakFor = flag.Duration("soak", 0, "run TestSoak for this long (.ci/run: 60s)")

// TestSoak drives a mixed workload at concurrency 128 against the binary
// for -soak (skipped without it): no 5xx, no status but the expected
// ones, and anonymous memory at the end below 64 MiB.
func TestSoak(t *testing.T) {
	if *soakFor == 0 {
		t.Skip("long: run with -soak 60s (.ci/run does)")
	}
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	srv := e2eStartServer(t, bin, db, "--rate-limit", "off")
	var clients []rtClient
	httpClient := &http.Client{Timeout: 70 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	for i := range 20 {
		email := fmt.Sprintf("soak%d@example.com", i)
		r := e2eRunCLI(t, bin, "user", "add", email, "--db", db)
		r.wantOK(t, "user add "+email)
		c := rtClient{srv.baseURL, email, strings.TrimSpace(r.stdout), httpClient}
		c.mustCall(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"one"},{"name":"two"}]`}}, http.StatusOK)
		clients = append(clients, c)
	}
	var requests, unexpected atomic.Int64
	var statuses sync.Map
	deadline := time.Now().Add(*soakFor)
	var wg sync.WaitGroup
	for w := range 128 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; time.Now().Before(deadline); i++ {
				c := clients[rng.IntN(len(clients))]
				channel := []string{"one", "two"}[rng.IntN(2)]
				var code int
				want := 200
				switch rng.IntN(8) {
				case 0, 1:
					code, _ = c.call(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {channel}, "topic": {fmt.Sprint("t", i%5)}, "content": {"soak"}})
				case 2:
					code, _ = c.call(t, http.MethodGet, "/api/v1/messages", url.Values{"anchor": {"first_unread"}, "num_before": {"10"}, "num_after": {"10"}, "narrow": {`[["channel","` + channel + `"]]`}})
				case 3:
					code, _ = c.call(t, http.MethodPost, "/api/v1/messages/flags/narrow", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"50"}, "narrow": {`[["channel","` + channel + `"],["is","unread"]]`}, "op": {"add"}, "flag": {"read"}})
				case 4:
					token := fmt.Sprintf("%04x%08x", w, i)
					if code, _ = c.call(t, http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {token}}); code == 200 {
						code, _ = c.call(t, http.MethodDelete, "/api/v1/users/me/apns_device_token", url.Values{"token": {token}})
					}
				case 5:
					var reg, body map[string]any
					if code, reg = c.call(t, http.MethodPost, "/api/v1/register", url.Values{"event_types": {`["message"]`}}); code == 200 {
						code, body = c.call(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {reg["queue_id"].(string)}, "dont_block": {"true"}})
						if code == 400 && body["code"] == "BAD_EVENT_QUEUE_ID" {
							code = 200 // another worker's register for the same user dropped the oldest queue
						}
					}
				case 6:
					code, _ = c.call(t, http.MethodGet, "/api/v1/users/me", nil)
				case 7:
					code, _ = c.call(t, http.MethodDelete, "/api/v1/users/me/apns_device_token", url.Values{"token": {"ffff"}})
					want = 400 // Token does not exist
				}
				requests.Add(1)
				if code != want {
					unexpected.Add(1)
					n, _ := statuses.LoadOrStore(code, new(atomic.Int64))
					n.(*atomic.Int64).Add(1)
				}
			}
		})
	}
	wg.Wait()
	rss := rssAnonKiB(t, srv.cmd.Process.Pid)
	t.Logf("soak: %d requests in %v at concurrency 128 (%.0f/s), %d unexpected, RssAnon at the end %.1f MiB",
		requests.Load(), *soakFor, float64(requests.Load())/soakFor.Seconds(), unexpected.Load(), float64(rss)/1024)
	statuses.Range(func(code, n any) bool {
		t.Errorf("status %v: %d times", code, n.(*atomic.Int64).Load())
		return true
	})
	if rss > 64*1024 {
		t.Errorf("RssAnon at the end: got %d KiB, want below 64 MiB", rss)
	}
}

// TestSecrets_NeverInWhatTheServerWrites plants an API key and a password,
// drives a session with failures, and scans everything the server wrote.
func TestSecrets_NeverInWhatTheServerWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	bin := e2eBuildBinary(t)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) { checkSecrets(t, bin, format) })
	}
}

func checkSecrets(t *testing.T, bin, format string) {
	db := filepath.Join(t.TempDir(), "z.db")
	srv := e2eStartServer(t, bin, db, "--log-format", format)
	const password = "planted-password-4711"
	add := exec.Command(bin, "user", "add", "planted@example.com", "--password-stdin", "--db", db)
	add.Env = e2eChildEnv()
	add.Stdin = strings.NewReader(password + "\n")
	out, err := add.Output()
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(out))
	if !isAPIKey(key) {
		t.Fatalf("user add printed %d characters, want an API key", len(key)) // not the output: it may be a key
	}
	// Each step must get its answer, or the scan below proves nothing:
	// the failures must be reached, and the login must mint a key.
	anon := rtClient{srv.baseURL, "", "", &http.Client{Timeout: 10 * time.Second}}
	login := anon.mustCall(t, http.MethodPost, "/api/v1/fetch_api_key", url.Values{"username": {"planted@example.com"}, "password": {password}}, http.StatusOK)
	minted, _ := login["api_key"].(string)
	if !isAPIKey(minted) {
		t.Fatalf("the planted password's login: got a %d-character api_key, want a new API key", len(minted))
	}
	anon.mustCall(t, http.MethodPost, "/api/v1/fetch_api_key", url.Values{"username": {"planted@example.com"}, "password": {password + "x"}}, http.StatusUnauthorized)
	c := rtClient{srv.baseURL, "planted@example.com", key, anon.http}
	c.mustCall(t, http.MethodGet, "/api/v1/users/me", nil, http.StatusOK)
	c.mustCall(t, http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {"zz"}}, http.StatusBadRequest)
	rtClient{srv.baseURL, "planted@example.com", otherKey(key), anon.http}.mustCall(t, http.MethodGet, "/api/v1/users/me", nil, http.StatusUnauthorized)
	rtClient{srv.baseURL, "planted@example.com", "short", anon.http}.mustCall(t, http.MethodGet, "/api/v1/users/me", nil, http.StatusUnauthorized)
	if err := srv.stop(); err != nil { // waits for the last of stderr, too
		t.Errorf("exit: %v", err)
	}
	written := srv.logs() + srv.output() // stdout holds the owner's bootstrap key, by design, and nothing planted
	header := base64.StdEncoding.EncodeToString([]byte("planted@example.com:" + key))
	for _, secret := range []string{key, minted, password, header, "Basic "} {
		if secret != "" && strings.Contains(written, secret) {
			t.Errorf("the server's output holds a planted secret (%d characters)", len(secret))
		}
	}
}

// otherKey is a well-formed API key that differs from key in its last
// character, so it is always the wrong key.
func otherKey(key string) string {
	i := strings.IndexByte(apiKeyAlphabet, key[len(key)-1])
	return key[:len(key)-1] + string(apiKeyAlphabet[(i+1)%len(apiKeyAlphabet)])
}
