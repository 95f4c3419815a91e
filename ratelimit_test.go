package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseRateRules(t *testing.T) {
	rules, err := parseRateRules(defaultRateRules)
	if err != nil || len(rules) != 2 || rules[0] != (rateRule{time.Minute, 200}) || rules[1] != (rateRule{time.Hour, 2000}) {
		t.Errorf("defaults: got %v, %v", rules, err)
	}
	if rules, err := parseRateRules("off"); rules != nil || err != nil {
		t.Errorf("off: got %v, %v", rules, err)
	}
	for _, bad := range []string{"", "60", "60:", "x:1", "60:0", "-1:5", "60:200,"} {
		if _, err := parseRateRules(bad); err == nil {
			t.Errorf("%q: got nil error", bad)
		}
	}
}

func TestRateLimit_PerAccountWithZulipHeadersAnd429(t *testing.T) {
	e := newTestEnv(t)
	e.server.limits = newRateLimiter([]rateRule{{time.Minute, 3}, {time.Hour, 100}})
	for i := range 3 {
		r := e.request(t, http.MethodGet, "/api/v1/users/me", nil, &e.alice)
		wantAPISuccess(t, r)
		if got := r.header.Get("X-RateLimit-Remaining"); got != strconv.Itoa(2-i) || r.header.Get("X-RateLimit-Limit") != "3" || r.header.Get("X-RateLimit-Reset") == "" {
			t.Errorf("request %d: headers Limit %q Remaining %q Reset %q", i+1, r.header.Get("X-RateLimit-Limit"), got, r.header.Get("X-RateLimit-Reset"))
		}
	}
	r := e.request(t, http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {"ab"}}, &e.alice)
	wantAPIError(t, r, 429, "RATE_LIMIT_HIT", "API usage exceeded rate limit")
	if secs, _ := r.body["retry-after"].(float64); secs < 1 || secs > 60 || r.header.Get("Retry-After") == "" || r.header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("429: retry-after %v, Retry-After %q, Remaining %q", r.body["retry-after"], r.header.Get("Retry-After"), r.header.Get("X-RateLimit-Remaining"))
	}
	if got := e.tokens(t, e.alice); len(got) != 0 {
		t.Errorf("a refused request changed state: tokens %v", got)
	}
	wantAPISuccess(t, e.request(t, http.MethodGet, "/api/v1/users/me", nil, &e.bob)) // per account
	wantAPISuccess(t, e.request(t, http.MethodGet, "/api/v1/server_settings", nil, nil))
}

func TestRateLimit_FailedAuthenticationsPerAddress(t *testing.T) {
	e := newTestEnv(t)
	e.server.limits = newRateLimiter([]rateRule{{time.Minute, 1000}})
	wrong := account{e.alice.user, newAPIKey()}
	for range 60 {
		wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/users/me", nil, &wrong), 401, "UNAUTHORIZED", "Invalid API key")
	}
	// From this address even a right key is refused now; 405 still comes first.
	r := e.request(t, http.MethodGet, "/api/v1/users/me", nil, &e.alice)
	wantAPIError(t, r, 429, "RATE_LIMIT_HIT", "API usage exceeded rate limit")
	if secs, _ := r.body["retry-after"].(float64); secs < 1 || secs > 600 || r.header.Get("Retry-After") != strconv.Itoa(int(secs)) {
		t.Errorf("429: retry-after %v, Retry-After %q; want the same, within the 10-minute window", r.body["retry-after"], r.header.Get("Retry-After"))
	}
	if r := e.request(t, http.MethodPut, "/api/v1/users/me", nil, &e.alice); r.status != 405 {
		t.Errorf("wrong method while throttled: got %d, want 405", r.status)
	}
	other := buildRequest(t, queryString, http.MethodGet, "/api/v1/users/me", nil)
	other.RemoteAddr = "192.0.2.7:4000"
	other.SetBasicAuth(e.alice.Email, e.alice.key)
	wantAPISuccess(t, e.do(t, other))
}

func TestRateLimit_OnlyWrongCredentialsCountAndEveryDoorIsThrottled(t *testing.T) {
	e := newTestEnv(t)
	e.server.limits = newRateLimiter([]rateRule{{time.Minute, 10_000}})
	gone := account{}
	gone.user, gone.key = mustCreateUser(t, e.st, "gone@example.com", roleMember, false)
	e.st.setActive("gone@example.com", false)
	for range 100 { // no credentials, and a right key of a deactivated account: not guesses
		e.request(t, http.MethodGet, "/api/v1/users/me", nil, nil)
		e.request(t, http.MethodGet, "/api/v1/users/me", nil, &gone)
	}
	wantAPISuccess(t, e.request(t, http.MethodGet, "/api/v1/users/me", nil, &e.alice))

	// Wrong keys on /metrics and wrong passwords on fetch_api_key count too.
	wrong := account{e.owner.user, newAPIKey()}
	for range 30 {
		e.request(t, http.MethodGet, "/metrics", nil, &wrong)
	}
	e.st.setPassword("bob@example.com", hashOf("bob-password"))
	for i := range 30 {
		e.login(t, "nobody"+strconv.Itoa(i)+"@example.com", "guess")
	}
	wantAPIError(t, e.request(t, http.MethodGet, "/metrics", nil, &e.owner), 429, "RATE_LIMIT_HIT", "API usage exceeded rate limit")
	wantAPIError(t, e.login(t, "bob@example.com", "bob-password"), 429, "RATE_LIMIT_HIT", "API usage exceeded rate limit")
}

func TestClientAddress_IPv6CountsPerSlash64(t *testing.T) {
	s := &server{}
	for remote, want := range map[string]string{
		"192.0.2.7:4000":            "192.0.2.7",
		"[2001:db8:1:2:3::9]:4000":  "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::]:443": "2001:db8:1:2::/64",
	} {
		r := &http.Request{RemoteAddr: remote}
		if got := s.clientAddress(r); got != want {
			t.Errorf("%s: got %s, want %s", remote, got, want)
		}
	}
}

// Behind trusted proxies the client is the rightmost X-Forwarded-For hop
// that is not a trusted proxy; from any other peer the header is
// ignored, and a malformed hop stops the walk at what can be believed.
func TestClientAddress_TrustedProxiesAndForwardedFor(t *testing.T) {
	proxies, err := parseTrustedProxies("10.0.0.0/8, 192.0.2.1,2001:db8:ffff::/48")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{trustedProxies: proxies}
	for _, c := range []struct {
		remote string
		xff    []string
		want   string
	}{
		{"192.0.2.1:1", []string{"203.0.113.7"}, "203.0.113.7"},
		{"192.0.2.1:1", []string{"198.51.100.1, 203.0.113.7, 10.1.2.3"}, "203.0.113.7"}, // a client's own header is left of its address
		{"192.0.2.1:1", []string{"198.51.100.1", "203.0.113.7"}, "203.0.113.7"},         // several header lines
		{"192.0.2.1:1", []string{"10.9.9.9, 10.1.1.1"}, "10.9.9.9"},                     // every hop trusted: the leftmost
		{"192.0.2.1:1", []string{"203.0.113.7, nonsense"}, "192.0.2.1"},                 // malformed: only the proxy is known
		{"192.0.2.1:1", nil, "192.0.2.1"},
		{"192.0.2.2:1", []string{"203.0.113.7"}, "192.0.2.2"}, // not a proxy: the header is the client's own
		{"[2001:db8:ffff::5]:1", []string{"2001:db8:1:2::9"}, "2001:db8:1:2::/64"},
	} {
		r := &http.Request{RemoteAddr: c.remote, Header: http.Header{"X-Forwarded-For": c.xff}}
		if got := s.clientAddress(r); got != c.want {
			t.Errorf("%s with X-Forwarded-For %q: got %s, want %s", c.remote, c.xff, got, c.want)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.example.com", "10.0.0"} {
		if _, err := parseTrustedProxies(bad); err == nil {
			t.Errorf("--trusted-proxies %q: got no error, want one", bad)
		}
	}
}

func TestRateLimit_AFullAddressTableNeverForgetsABlockedAddress(t *testing.T) {
	l := newRateLimiter([]rateRule{{time.Minute, 10}})
	now := time.Now()
	for range 60 {
		l.failedAuthentication("203.0.113.9", now)
	}
	for i := range maxLimitedAddresses + 10 {
		l.failedAuthentication("198.51.100."+strconv.Itoa(i), now) // one guess each from many addresses
	}
	if l.addressBlocked("203.0.113.9", now) == nil {
		t.Errorf("a blocked address was forgotten when the table filled")
	}
	if len(l.failures) > maxLimitedAddresses+1 {
		t.Errorf("table size: got %d, want at most %d", len(l.failures), maxLimitedAddresses+1)
	}
}

// Every authenticated answer carries the X-RateLimit-* headers, a refusal
// too, and a refused request is counted.
func TestRateLimit_HeadersOnAnErrorToo(t *testing.T) {
	e := newTestEnv(t)
	e.server.limits = newRateLimiter([]rateRule{{time.Minute, 5}})
	r := e.request(t, http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {"xyz1"}}, &e.alice)
	wantAPIError(t, r, 400, "BAD_REQUEST", "Invalid APNS token")
	if r.header.Get("X-RateLimit-Limit") != "5" || r.header.Get("X-RateLimit-Remaining") != "4" || r.header.Get("X-RateLimit-Reset") == "" {
		t.Errorf("headers on a 400: Limit %q Remaining %q Reset %q", r.header.Get("X-RateLimit-Limit"), r.header.Get("X-RateLimit-Remaining"), r.header.Get("X-RateLimit-Reset"))
	}
}

// --rate-limit off switches off both kinds (SPEC §8): per account, and
// failed authentications per address (and so failed logins) too; the
// abuse budgets stay (TestRateLimitOff_KeepsTheChannelCreationBudget).
func TestRateLimit_OffSwitchesOffRequestAndAuthenticationLimits(t *testing.T) {
	db := filepath.Join(t.TempDir(), "z.db")
	stdout, stderr, _ := startServe(t, db, nil, "--rate-limit", "off")
	base := "http://" + addrFrom(t, stderr, "msg=listening")
	ownerKey := ownerKeyFrom(stdout)
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"user", "add", "carol@example.com", "--password-stdin", "--db", db},
		func(string) string { return "" }, strings.NewReader("carol-password\n"), &out, &errOut); err != nil {
		t.Fatalf("user add: %v %s", err, errOut.String())
	}
	for i := range 70 { // more than the 60 failed authentications an address may make
		if code, _, _ := get(t, http.DefaultClient, base+"/api/v1/users/me", "owner@zulite.localhost", newAPIKey()); code != 401 {
			t.Fatalf("wrong key %d: got %d, want 401", i+1, code)
		}
	}
	if code, body, _ := get(t, http.DefaultClient, base+"/api/v1/users/me", "owner@zulite.localhost", ownerKey); code != 200 {
		t.Fatalf("right key after 70 wrong ones: got %d %s, want 200", code, body)
	}
	login := func(password string) int {
		resp, err := http.PostForm(base+"/api/v1/fetch_api_key", url.Values{"username": {"carol@example.com"}, "password": {password}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 8 { // more than the 5 failed logins an account may have
		if code := login("guess"); code != 401 {
			t.Fatalf("wrong password %d: got %d, want 401", i+1, code)
		}
	}
	if code := login("carol-password"); code != 200 {
		t.Fatalf("right password after 8 wrong ones: got %d, want 200", code)
	}
}

// SPEC §3's order around the rate limit: authentication (401) comes
// before it, and role checks (a bot on a push-token route) after it.
func TestRateLimit_ComesAfterAuthenticationAndBeforeRoleChecks(t *testing.T) {
	e := newTestEnv(t)
	e.server.limits = newRateLimiter([]rateRule{{time.Minute, 1}})
	wantAPISuccess(t, e.request(t, http.MethodGet, "/api/v1/users/me", nil, &e.alice))
	wantAPISuccess(t, e.request(t, http.MethodGet, "/api/v1/users/me", nil, &e.bot))
	// alice is over her limit, but a wrong key is refused as a wrong key.
	wrong := account{e.alice.user, newAPIKey()}
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/users/me", nil, &wrong), 401, "UNAUTHORIZED", "Invalid API key")
	// The bot is over its limit: 429, not the bot refusal.
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {"aabb"}}, &e.bot),
		429, "RATE_LIMIT_HIT", "API usage exceeded rate limit")
}

// Failed authentications: 60 per address per 10 minutes (SPEC §8).
func TestRateLimit_FailedAuthenticationWindowIsTenMinutes(t *testing.T) {
	l := newRateLimiter([]rateRule{{time.Minute, 10}})
	start := time.Now()
	for range 59 {
		l.failedAuthentication("203.0.113.9", start)
	}
	if err := l.addressBlocked("203.0.113.9", start); err != nil {
		t.Fatalf("after 59 failures: got %v, want not blocked", err)
	}
	l.failedAuthentication("203.0.113.9", start)
	for _, later := range []time.Duration{0, time.Minute, 9*time.Minute + 59*time.Second} {
		if err := l.addressBlocked("203.0.113.9", start.Add(later)); err == nil {
			t.Errorf("60 failures, %v later: not blocked, want blocked until 10 minutes have passed", later)
		}
	}
	if err := l.addressBlocked("203.0.113.9", start.Add(10*time.Minute+time.Second)); err != nil {
		t.Errorf("10 minutes later: got %v, want not blocked", err)
	}
}

// --rate-limit off lifts the request limits, not the abuse budgets: with
// it, an account still creates at most 200 channels an hour (one member
// created 6,000 in 600 requests when off lifted the budget too), and the
// help says which limits off lifts and which stay (issue 28, item 5).
func TestRateLimitOff_KeepsTheChannelCreationBudget(t *testing.T) {
	bin := e2eBuildBinary(t)
	help := e2eRunCLI(t, bin, "serve", "--help")
	for _, want := range []string{"failed-authentication", "not the channel-creation budget"} {
		if !strings.Contains(help.stdout, want) {
			t.Errorf("serve --help on --rate-limit: got no %q in\n%s", want, help.stdout)
		}
	}
	db := filepath.Join(t.TempDir(), "z.db")
	srv := e2eStartServer(t, bin, db, "--rate-limit", "off")
	r := e2eRunCLI(t, bin, "user", "add", "mallory@example.com", "--db", db)
	r.wantOK(t, "user add")
	mallory := e2eNewClient(srv.baseURL, "mallory@example.com", strings.TrimSpace(r.stdout))
	subscribe := func(first, n int) (int, map[string]any, http.Header) {
		var names []string
		for i := range n {
			names = append(names, fmt.Sprintf(`{"name":"c%d"}`, first+i))
		}
		return mallory.do(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {"[" + strings.Join(names, ",") + "]"}}, e2ePython)
	}
	for i := range 2 {
		status, body, header := subscribe(i*100, 100)
		if status != 200 {
			t.Fatalf("100 new channels (%d): got %d %v, want 200", i, status, body["msg"])
		}
		if header.Get("X-RateLimit-Limit") != "" {
			t.Errorf("X-RateLimit-Limit with --rate-limit off: got %q, want none", header.Get("X-RateLimit-Limit"))
		}
	}
	status, body, _ := subscribe(200, 1)
	if status != 429 || body["code"] != "RATE_LIMIT_HIT" || body["msg"] != "API usage exceeded rate limit" || body["retry-after"] == nil {
		t.Errorf("the 201st channel within the hour: got %d %v %q retry-after %v, want 429 RATE_LIMIT_HIT %q with retry-after", status, body["code"], body["msg"], body["retry-after"], "API usage exceeded rate limit")
	}
	status, body, _ = mallory.do(t, http.MethodGet, "/api/v1/streams", url.Values{"include_all": {"true"}}, e2ePython)
	if n := len(body["streams"].([]any)); status != 200 || n != 200 {
		t.Errorf("channels after the refusal: got %d (status %d), want 200", n, status)
	}
}
