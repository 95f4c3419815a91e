package push

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAPNs is Apple's endpoint on loopback, over HTTP/2 and TLS: it
// checks each request's provider token (ES256, kid, iss) and records
// it, and answers what it is told to.
type fakeAPNs struct {
	srv *httptest.Server
	key *ecdsa.PrivateKey

	mu       sync.Mutex
	requests []apnsRequest
	status   int    // 0: 200
	reason   string // the answer's reason
	after    string // Retry-After
}

type apnsRequest struct {
	proto, path string
	header      http.Header
	body        []byte
	jwtValid    bool
}

const (
	testKeyID  = "ABC123DEFG"
	testTeamID = "TEAM456XYZ"
)

func newFakeAPNs(t *testing.T) *fakeAPNs {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeAPNs{key: key}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.EnableHTTP2 = true
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPNs) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	jwt, _ := strings.CutPrefix(r.Header.Get("authorization"), "bearer ")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, apnsRequest{proto: r.Proto, path: r.URL.Path, header: r.Header.Clone(), body: body, jwtValid: f.validJWT(jwt)})
	if f.after != "" {
		w.Header().Set("Retry-After", f.after)
	}
	if f.status != 0 && f.status != http.StatusOK {
		w.WriteHeader(f.status)
		fmt.Fprintf(w, `{"reason":%q}`, f.reason)
	}
}

func (f *fakeAPNs) answer(status int, reason, after string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.reason, f.after = status, reason, after
}

func (f *fakeAPNs) last(t *testing.T) apnsRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		t.Fatal("APNs got no request")
	}
	return f.requests[len(f.requests)-1]
}

func (f *fakeAPNs) validJWT(jwt string) bool {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return false
	}
	var header, claims map[string]any
	if !decodeJWTPart(parts[0], &header) || !decodeJWTPart(parts[1], &claims) {
		return false
	}
	if header["alg"] != "ES256" || header["kid"] != testKeyID || claims["iss"] != testTeamID {
		return false
	}
	if _, ok := claims["iat"].(float64); !ok {
		return false
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return false
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	return ecdsa.Verify(&f.key.PublicKey, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
}

// writeKey writes key as Apple hands it out: a PKCS #8 .p8 file.
func writeKey(t *testing.T, key any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "AuthKey.p8")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// newTestAPNsClient is a client of f whose clock stands at *now.
func newTestAPNsClient(t *testing.T, f *fakeAPNs, now *time.Time) *APNsClient {
	t.Helper()
	c, err := NewAPNsClient(writeKey(t, f.key), testKeyID, testTeamID, f.srv.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	trust(c.http.Transport.(*http.Transport), f.srv)
	c.now = func() time.Time { return *now }
	return c
}

var testAPNsPayload = Notification{APNs: json.RawMessage(`{"alert":{"title":"t","body":"b"},"badge":0,"custom":{"zulip":{"user_id":5}}}`)}

// TestAPNsClient_SendsZulipsRequestOverHTTP2 checks the request: HTTP/2,
// the device's token without its spaces in the path, a valid ES256
// provider token, the app's topic (Zulip's app by default), an alert
// push at priority 10 expiring in 24 hours, and Zulip's wire payload
// (custom's members at the top, the rest under aps).
func TestAPNsClient_SendsZulipsRequestOverHTTP2(t *testing.T) {
	f := newFakeAPNs(t)
	now := time.Unix(1_700_000_000, 0)
	c := newTestAPNsClient(t, f, &now)
	for _, tc := range []struct {
		appID, wantTopic string
	}{
		{"org.example.zulip", "org.example.zulip"},
		{"", "org.zulip.Zulip"},
	} {
		if err := c.Send(context.Background(), Device{Kind: APNs, Token: " aa01 ff\t", AppID: tc.appID}, testAPNsPayload); err != nil {
			t.Fatalf("Send: %v", err)
		}
		r := f.last(t)
		if r.proto != "HTTP/2.0" {
			t.Errorf("protocol: got %s, want HTTP/2.0", r.proto)
		}
		if r.path != "/3/device/aa01ff" {
			t.Errorf("path: got %s, want /3/device/aa01ff", r.path)
		}
		if !r.jwtValid {
			t.Errorf("authorization: not a valid ES256 provider token of the key")
		}
		want := map[string]string{"apns-topic": tc.wantTopic, "apns-push-type": "alert", "apns-priority": "10",
			"apns-expiration": strconv.FormatInt(now.Add(24*time.Hour).Unix(), 10), "content-type": "application/json"}
		for k, v := range want {
			if got := r.header.Get(k); got != v {
				t.Errorf("%s: got %q, want %q", k, got, v)
			}
		}
		sameJSON(t, "wire payload", r.body, `{"aps":{"alert":{"title":"t","body":"b"},"badge":0},"zulip":{"user_id":5}}`)
	}
}

// TestAPNsClient_AnswersSayDeadOrTransient checks how Apple's answers
// read: a gone token (410, BadDeviceToken, Unregistered,
// DeviceTokenNotForTopic) is dead; 429, 5xx and an expired provider
// token may pass, after the Retry-After given; anything else will not;
// no answer at all may pass. No error holds the provider token or the
// key.
func TestAPNsClient_AnswersSayDeadOrTransient(t *testing.T) {
	f := newFakeAPNs(t)
	now := time.Unix(1_700_000_000, 0)
	c := newTestAPNsClient(t, f, &now)
	keyPEM, _ := os.ReadFile(writeKey(t, f.key))
	for _, tc := range []struct {
		name           string
		status         int
		reason, after  string
		want           string
		wantRetryAfter time.Duration
	}{
		{"acknowledged", 200, "", "", "ok", 0},
		{"410 Unregistered is dead", 410, "Unregistered", "", "dead", 0},
		{"BadDeviceToken is dead", 400, "BadDeviceToken", "", "dead", 0},
		{"DeviceTokenNotForTopic is dead", 400, "DeviceTokenNotForTopic", "", "dead", 0},
		{"503 may pass after its Retry-After", 503, "ServiceUnavailable", "7", "transient", 7 * time.Second},
		{"429 may pass", 429, "TooManyRequests", "", "transient", 0},
		{"ExpiredProviderToken may pass", 403, "ExpiredProviderToken", "", "transient", 0},
		{"a bad Retry-After is none", 500, "InternalServerError", "soon", "transient", 0},
		{"BadTopic will not pass", 400, "BadTopic", "", "failed", 0},
		{"PayloadTooLarge will not pass", 413, "PayloadTooLarge", "", "failed", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.answer(tc.status, tc.reason, tc.after)
			err := c.Send(context.Background(), Device{Kind: APNs, Token: "aa01"}, testAPNsPayload)
			got, after := outcome(err)
			if got != tc.want || after != tc.wantRetryAfter {
				t.Errorf("got %s (Retry-After %v, %v), want %s (Retry-After %v)", got, after, err, tc.want, tc.wantRetryAfter)
			}
			if err != nil && !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q: got no reason, want %s", err, tc.reason)
			}
			jwt, _ := strings.CutPrefix(f.last(t).header.Get("authorization"), "bearer ")
			wantNoSecret(t, err, jwt, string(keyPEM))
		})
	}
	f.srv.Close()
	err := c.Send(context.Background(), Device{Kind: APNs, Token: "aa01"}, testAPNsPayload)
	if got, _ := outcome(err); got != "transient" {
		t.Errorf("no answer: got %s (%v), want transient", got, err)
	}
	wantNoSecret(t, err, "bearer", string(keyPEM))
}

// TestAPNsClient_ProviderTokenRenewed checks the provider token's life:
// one for 50 minutes, then a new one; after ExpiredProviderToken, a new
// one at once.
func TestAPNsClient_ProviderTokenRenewed(t *testing.T) {
	f := newFakeAPNs(t)
	now := time.Unix(1_700_000_000, 0)
	c := newTestAPNsClient(t, f, &now)
	jwt := func() string {
		t.Helper()
		c.Send(context.Background(), Device{Kind: APNs, Token: "aa01"}, testAPNsPayload)
		r := f.last(t)
		if !r.jwtValid {
			t.Fatalf("authorization: not a valid ES256 provider token")
		}
		return r.header.Get("authorization")
	}
	first := jwt()
	now = now.Add(49 * time.Minute)
	if got := jwt(); got != first {
		t.Errorf("after 49 minutes: got a new provider token, want the same")
	}
	now = now.Add(2 * time.Minute)
	second := jwt()
	if second == first {
		t.Errorf("after 51 minutes: got the same provider token, want a new one")
	}
	f.answer(403, "ExpiredProviderToken", "")
	if got := jwt(); got != second {
		t.Errorf("the refused request: got a new provider token, want the one refused")
	}
	f.answer(200, "", "")
	if got := jwt(); got == second {
		t.Errorf("after ExpiredProviderToken: got the same provider token, want a new one")
	}
}

// TestNewAPNsClient_Refusals checks what a key is refused for: no key
// id or team id (ErrAPNsIdentity, for the CLI's usage error), no file,
// not PEM, not an EC key.
func TestNewAPNsClient_Refusals(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 1024)
	notPEM := filepath.Join(t.TempDir(), "key.txt")
	os.WriteFile(notPEM, []byte("not a key"), 0o600)
	for _, tc := range []struct {
		name, file, keyID, teamID, want string
	}{
		{"no key id", writeKey(t, ec), "", testTeamID, ErrAPNsIdentity.Error()},
		{"no team id", writeKey(t, ec), testKeyID, "", ErrAPNsIdentity.Error()},
		{"no file", filepath.Join(t.TempDir(), "none.p8"), testKeyID, testTeamID, "APNs key: open"},
		{"not PEM", notPEM, testKeyID, testTeamID, "APNs key: not a PEM file"},
		{"an RSA key", writeKey(t, rsaKey), testKeyID, testTeamID, "APNs key: not an EC key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewAPNsClient(tc.file, tc.keyID, tc.teamID, "https://api.push.apple.com")
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v, want %s", err, tc.want)
			}
			if got, want := errors.Is(err, ErrAPNsIdentity), tc.keyID == "" || tc.teamID == ""; got != want {
				t.Errorf("errors.Is(%v, ErrAPNsIdentity): got %v, want %v", err, got, want)
			}
		})
	}
}
