package push

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"zulite/internal/push/pushtest"
)

// newTestAPNsClient is a client of f whose clock stands at *now.
func newTestAPNsClient(t *testing.T, f *pushtest.APNs, now *time.Time) *APNsClient {
	t.Helper()
	c, err := NewAPNsClient(f.KeyFile(t), pushtest.APNsKeyID, pushtest.APNsTeamID, f.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	trust(c.http.Transport.(*http.Transport), f.Server)
	c.now = func() time.Time { return *now }
	f.SetClock(c.now)
	return c
}

var testAPNsPayload = Notification{APNs: json.RawMessage(`{"alert":{"title":"t","body":"b"},"badge":0,"custom":{"zulip":{"user_id":5}}}`)}

// TestAPNsClient_SendsZulipsRequestOverHTTP2 checks the request: HTTP/2,
// the device's token without its spaces in the path, a valid ES256
// provider token, the app's topic (Zulip's app by default), an alert
// push at priority 10 expiring in 24 hours, and Zulip's wire payload
// (custom's members at the top, the rest under aps).
func TestAPNsClient_SendsZulipsRequestOverHTTP2(t *testing.T) {
	f := pushtest.NewAPNs(t)
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
		r := f.Last(t)
		if r.Proto != "HTTP/2.0" {
			t.Errorf("protocol: got %s, want HTTP/2.0", r.Proto)
		}
		if r.Path != "/3/device/aa01ff" {
			t.Errorf("path: got %s, want /3/device/aa01ff", r.Path)
		}
		if !r.JWTValid {
			t.Errorf("authorization: not a valid ES256 provider token of the key")
		}
		want := map[string]string{"apns-topic": tc.wantTopic, "apns-push-type": "alert", "apns-priority": "10",
			"apns-expiration": strconv.FormatInt(now.Add(24*time.Hour).Unix(), 10), "content-type": "application/json"}
		for k, v := range want {
			if got := r.Header.Get(k); got != v {
				t.Errorf("%s: got %q, want %q", k, got, v)
			}
		}
		sameJSON(t, "wire payload", r.Raw, `{"aps":{"alert":{"title":"t","body":"b"},"badge":0},"zulip":{"user_id":5}}`)
	}
}

// TestAPNsClient_AnswersSayDeadOrTransient checks how Apple's answers
// read: a gone token (410, BadDeviceToken, Unregistered,
// DeviceTokenNotForTopic) is dead; 429, 5xx and an expired provider
// token may pass, after the Retry-After given; anything else will not;
// no answer at all may pass. No error holds the provider token or the
// key.
func TestAPNsClient_AnswersSayDeadOrTransient(t *testing.T) {
	f := pushtest.NewAPNs(t)
	now := time.Unix(1_700_000_000, 0)
	c := newTestAPNsClient(t, f, &now)
	keyPEM, _ := os.ReadFile(f.KeyFile(t))
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
			f.Answer(tc.status, tc.reason, tc.after)
			err := c.Send(context.Background(), Device{Kind: APNs, Token: "aa01"}, testAPNsPayload)
			got, after := outcome(err)
			if got != tc.want || after != tc.wantRetryAfter {
				t.Errorf("got %s (Retry-After %v, %v), want %s (Retry-After %v)", got, after, err, tc.want, tc.wantRetryAfter)
			}
			if err != nil && !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q: got no reason, want %s", err, tc.reason)
			}
			jwt, _ := strings.CutPrefix(f.Last(t).Header.Get("authorization"), "bearer ")
			wantNoSecret(t, err, jwt, string(keyPEM))
		})
	}
	f.Server.Close()
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
	f := pushtest.NewAPNs(t)
	now := time.Unix(1_700_000_000, 0)
	c := newTestAPNsClient(t, f, &now)
	jwt := func() string {
		t.Helper()
		c.Send(context.Background(), Device{Kind: APNs, Token: "aa01"}, testAPNsPayload)
		r := f.Last(t)
		if !r.JWTValid {
			t.Fatalf("authorization: not a valid ES256 provider token")
		}
		return r.Header.Get("authorization")
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
	f.Answer(403, "ExpiredProviderToken", "")
	if got := jwt(); got != second {
		t.Errorf("the refused request: got a new provider token, want the one refused")
	}
	f.Answer(200, "", "")
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
		{"no key id", pushtest.WriteKey(t, ec), "", pushtest.APNsTeamID, ErrAPNsIdentity.Error()},
		{"no team id", pushtest.WriteKey(t, ec), pushtest.APNsKeyID, "", ErrAPNsIdentity.Error()},
		{"no file", filepath.Join(t.TempDir(), "none.p8"), pushtest.APNsKeyID, pushtest.APNsTeamID, "APNs key: open"},
		{"not PEM", notPEM, pushtest.APNsKeyID, pushtest.APNsTeamID, "APNs key: not a PEM file"},
		{"an RSA key", pushtest.WriteKey(t, rsaKey), pushtest.APNsKeyID, pushtest.APNsTeamID, "APNs key: not an EC key"},
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
