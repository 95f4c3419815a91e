package push

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"zulite/internal/push/pushtest"
)

// newTestFCMClient is a client of f whose clock stands at *now, and
// the private key it signs with; f's protocol violations fail the test.
func newTestFCMClient(t *testing.T, f *pushtest.FCM, now *time.Time) (*FCMClient, string) {
	t.Helper()
	t.Cleanup(func() { f.CheckViolations(t) })
	c, err := NewFCMClient(f.CredentialsFile(t), f.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	c.http = f.Server.Client()
	c.now = func() time.Time { return *now }
	return c, f.PrivateKeyPEM(t)
}

// TestFCMClient_SendsZulipsDataAsStrings checks the message: the
// device's token, Zulip's data with every value a string (Python's str:
// True, False), and android.priority from gcm_options (high when none).
func TestFCMClient_SendsZulipsDataAsStrings(t *testing.T) {
	f := pushtest.NewFCM(t)
	now := time.Unix(1_700_000_000, 0)
	c, _ := newTestFCMClient(t, f, &now)
	n := Notification{FCM: json.RawMessage(`{"event":"message","zulip_message_id":12345678901234,"content_truncated":false,"flag":true,"n":1.5,"s":"x"}`)}
	if err := c.Send(context.Background(), Device{Kind: FCM, Token: "bob-fcm"}, n); err != nil {
		t.Fatalf("Send: %v", err)
	}
	m := f.Last(t)
	want := map[string]any{"event": "message", "zulip_message_id": "12345678901234", "content_truncated": "False", "flag": "True",
		"n": "1.5", "s": "x"}
	if len(m.Data) != len(want) {
		t.Errorf("data: got %v, want %v", m.Data, want)
	}
	for k, v := range want {
		if m.Data[k] != v {
			t.Errorf("data %s: got %#v, want %#v", k, m.Data[k], v)
		}
	}
	if m.Token != "bob-fcm" || m.Priority != "high" {
		t.Errorf("token, priority: got %q, %q, want bob-fcm, high", m.Token, m.Priority)
	}
	n.FCMPriority = "normal"
	c.Send(context.Background(), Device{Kind: FCM, Token: "bob-fcm"}, n)
	if got := f.Last(t).Priority; got != "normal" {
		t.Errorf("priority normal: got %q", got)
	}
}

// TestFCMClient_AccessTokenKept checks the OAuth token's life: one
// exchange, kept until a minute before it expires, then a new one; a
// 401 drops it.
func TestFCMClient_AccessTokenKept(t *testing.T) {
	f := pushtest.NewFCM(t)
	now := time.Unix(1_700_000_000, 0)
	c, _ := newTestFCMClient(t, f, &now)
	send := func() error {
		return c.Send(context.Background(), Device{Kind: FCM, Token: "t"}, Notification{FCM: json.RawMessage(`{}`)})
	}
	for _, step := range []struct {
		name      string
		advance   time.Duration
		status    int
		wantCalls int
	}{
		{"the first send exchanges", 0, 200, 1},
		{"58 minutes on: kept", 58 * time.Minute, 200, 1},
		{"59 minutes on: a minute before it expires, renewed", time.Minute, 200, 2},
		{"a 401 is answered", 0, 401, 2},
		{"after a 401: renewed", 0, 200, 3},
	} {
		now = now.Add(step.advance)
		f.Answer(step.status, "", "")
		send()
		if got := f.OAuthCalls(); got != step.wantCalls {
			t.Errorf("%s: got %d exchanges, want %d", step.name, got, step.wantCalls)
		}
	}
}

// TestFCMClient_AnswersSayDeadOrTransient checks how FCM's answers
// read: UNREGISTERED is dead; 401 (the access token to renew), 429 and
// 5xx may pass, after the Retry-After given; anything else will not; no
// answer, from FCM or from the token exchange, may pass; a refused
// exchange may pass too. No error holds
// the access token, the assertion or the private key.
func TestFCMClient_AnswersSayDeadOrTransient(t *testing.T) {
	f := pushtest.NewFCM(t)
	now := time.Unix(1_700_000_000, 0)
	c, privateKey := newTestFCMClient(t, f, &now)
	send := func() error {
		return c.Send(context.Background(), Device{Kind: FCM, Token: "t"}, Notification{FCM: json.RawMessage(`{"event":"message"}`)})
	}
	unregistered := `{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}`
	for _, tc := range []struct {
		name, body, after string
		status            int
		want              string
		wantRetryAfter    time.Duration
	}{
		{"acknowledged", "", "", 200, "ok", 0},
		{"UNREGISTERED is dead", unregistered, "", 404, "dead", 0},
		{"401 may pass", `{"error":{"code":401,"status":"UNAUTHENTICATED"}}`, "", 401, "transient", 0},
		{"503 may pass after its Retry-After", `{"error":{"code":503,"status":"UNAVAILABLE"}}`, "3", 503, "transient", 3 * time.Second},
		{"429 may pass", `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}`, "", 429, "transient", 0},
		{"INVALID_ARGUMENT will not pass", `{"error":{"code":400,"status":"INVALID_ARGUMENT"}}`, "", 400, "failed", 0},
		{"SENDER_ID_MISMATCH will not pass", `{"error":{"code":403,"status":"PERMISSION_DENIED","details":[{"errorCode":"SENDER_ID_MISMATCH"}]}}`, "", 403, "failed", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.Answer(tc.status, tc.body, tc.after)
			err := send()
			got, after := outcome(err)
			if got != tc.want || after != tc.wantRetryAfter {
				t.Errorf("got %s (Retry-After %v, %v), want %s (Retry-After %v)", got, after, err, tc.want, tc.wantRetryAfter)
			}
			wantNoSecret(t, err, pushtest.FCMAccessToken, privateKey)
		})
	}
	t.Run("no answer", func(t *testing.T) {
		closed := httptest.NewServer(http.NotFoundHandler())
		closed.Close()
		url := c.url
		c.url = closed.URL
		defer func() { c.url = url }()
		err := send()
		if got, _ := outcome(err); got != "transient" {
			t.Errorf("got %s (%v), want transient", got, err)
		}
		wantNoSecret(t, err, pushtest.FCMAccessToken, privateKey)
	})
	t.Run("the token exchange refused", func(t *testing.T) {
		f.RefuseOAuth(true)
		now = now.Add(2 * time.Hour)
		err := send()
		if got, _ := outcome(err); got != "transient" || !strings.Contains(err.Error(), "FCM OAuth: 400") {
			t.Errorf("got %s (%v), want transient, FCM OAuth: 400", got, err)
		}
		wantNoSecret(t, err, pushtest.FCMAccessToken, privateKey, "assertion", "eyJ")
		f.RefuseOAuth(false)
	})
	t.Run("no answer from the token exchange", func(t *testing.T) {
		f.Server.Close()
		err := send()
		if got, _ := outcome(err); got != "transient" {
			t.Errorf("got %s (%v), want transient", got, err)
		}
		wantNoSecret(t, err, pushtest.FCMAccessToken, privateKey, "eyJ")
	})
}

// TestNewFCMClient_Refusals checks what a service account key is refused
// for, without the key in the error.
func TestNewFCMClient_Refusals(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 1024)
	keyPEM := pushtest.KeyPEM(t, rsaKey)
	write := func(sa map[string]string) string {
		raw, _ := json.Marshal(sa)
		p := filepath.Join(t.TempDir(), "sa.json")
		os.WriteFile(p, raw, 0o600)
		return p
	}
	full := func(change func(map[string]string)) string {
		sa := map[string]string{"project_id": "proj", "client_email": pushtest.FCMServiceAccount, "private_key": keyPEM, "token_uri": "https://oauth2.googleapis.com/token"}
		change(sa)
		return write(sa)
	}
	for _, tc := range []struct {
		name, file, want string
	}{
		{"no file", filepath.Join(t.TempDir(), "none.json"), "FCM credentials: open"},
		{"no project_id", full(func(sa map[string]string) { delete(sa, "project_id") }), "FCM credentials: project_id, client_email and token_uri are needed"},
		{"private_key not PEM", full(func(sa map[string]string) { sa["private_key"] = "secret" }), "FCM credentials: private_key is not PEM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewFCMClient(tc.file, "https://fcm.googleapis.com")
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v, want %s", err, tc.want)
			}
			wantNoSecret(t, err, keyPEM, "secret")
		})
	}
	if _, err := NewFCMClient(full(func(map[string]string) {}), "https://fcm.googleapis.com"); err != nil {
		t.Errorf("a whole key: got %v, want none", err)
	}
}
