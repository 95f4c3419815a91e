package push

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeFCM is FCM's HTTP v1 endpoint and its OAuth token exchange on
// loopback: it checks the RS256 assertion and the access token, records
// each message, and answers what it is told to.
type fakeFCM struct {
	srv    *httptest.Server
	key    *rsa.PrivateKey
	access string

	mu         sync.Mutex
	oauthCalls int
	oauthFails bool
	messages   []fcmMessage
	status     int    // 0: 200
	answerBody string // the error answer
	after      string // Retry-After
	violations []string
}

type fcmMessage struct {
	Token   string         `json:"token"`
	Data    map[string]any `json:"data"`
	Android struct {
		Priority string `json:"priority"`
	} `json:"android"`
}

const testServiceAccount = "zulite@proj.iam.gserviceaccount.com"

func newFakeFCM(t *testing.T) *fakeFCM {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeFCM{key: key, access: "ya29.test-access-token"}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() {
		for _, v := range f.violations {
			t.Errorf("protocol: %s", v)
		}
	})
	return f
}

func (f *fakeFCM) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/token":
		r.ParseForm()
		f.oauthCalls++
		if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || !f.validAssertion(r.PostForm.Get("assertion")) {
			f.violations = append(f.violations, "OAuth exchange: not a jwt-bearer grant with a valid RS256 assertion")
		}
		if f.oauthFails {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, `{"access_token":%q,"expires_in":3599,"token_type":"Bearer"}`, f.access)
	case "/v1/projects/proj/messages:send":
		if r.Header.Get("Authorization") != "Bearer "+f.access {
			f.violations = append(f.violations, "send: Authorization is not the access token")
		}
		var req struct {
			Message fcmMessage `json:"message"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			f.violations = append(f.violations, fmt.Sprintf("send body: %v", err))
		}
		f.messages = append(f.messages, req.Message)
		if f.after != "" {
			w.Header().Set("Retry-After", f.after)
		}
		if f.status != 0 && f.status != http.StatusOK {
			w.WriteHeader(f.status)
			io.WriteString(w, f.answerBody)
			return
		}
		io.WriteString(w, `{"name":"projects/proj/messages/0:1"}`)
	default:
		f.violations = append(f.violations, "request to "+r.URL.Path)
		http.NotFound(w, r)
	}
}

func (f *fakeFCM) validAssertion(jwt string) bool {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return false
	}
	var header, claims map[string]any
	if !decodeJWTPart(parts[0], &header) || !decodeJWTPart(parts[1], &claims) {
		return false
	}
	iat, _ := claims["iat"].(float64)
	exp, _ := claims["exp"].(float64)
	if header["alg"] != "RS256" || header["typ"] != "JWT" || claims["iss"] != testServiceAccount || claims["aud"] != f.srv.URL+"/token" ||
		claims["scope"] != "https://www.googleapis.com/auth/firebase.messaging" || exp-iat != 3600 {
		return false
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return false
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	return rsa.VerifyPKCS1v15(&f.key.PublicKey, crypto.SHA256, digest[:], sig) == nil
}

func (f *fakeFCM) answer(status int, body, after string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.answerBody, f.after = status, body, after
}

func (f *fakeFCM) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.oauthCalls
}

func (f *fakeFCM) last(t *testing.T) fcmMessage {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.messages) == 0 {
		t.Fatal("FCM got no message")
	}
	return f.messages[len(f.messages)-1]
}

// credentialsFile writes a service account key as Google hands it out.
func (f *fakeFCM) credentialsFile(t *testing.T) (path, privateKey string) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(f.key)
	if err != nil {
		t.Fatal(err)
	}
	privateKey = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	sa, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "proj", "private_key_id": "k1",
		"private_key": privateKey, "client_email": testServiceAccount, "token_uri": f.srv.URL + "/token"})
	path = filepath.Join(t.TempDir(), "service-account.json")
	if err := os.WriteFile(path, sa, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, privateKey
}

func newTestFCMClient(t *testing.T, f *fakeFCM, now *time.Time) (*FCMClient, string) {
	t.Helper()
	file, privateKey := f.credentialsFile(t)
	c, err := NewFCMClient(file, f.srv.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	c.http = f.srv.Client()
	c.now = func() time.Time { return *now }
	return c, privateKey
}

// TestFCMClient_SendsZulipsDataAsStrings checks the message: the
// device's token, Zulip's data with every value a string (Python's str:
// True, False), and android.priority from gcm_options (high when none).
func TestFCMClient_SendsZulipsDataAsStrings(t *testing.T) {
	f := newFakeFCM(t)
	now := time.Unix(1_700_000_000, 0)
	c, _ := newTestFCMClient(t, f, &now)
	n := Notification{FCM: json.RawMessage(`{"event":"message","zulip_message_id":12345678901234,"content_truncated":false,"flag":true,"n":1.5,"s":"x"}`)}
	if err := c.Send(context.Background(), Device{Kind: FCM, Token: "bob-fcm"}, n); err != nil {
		t.Fatalf("Send: %v", err)
	}
	m := f.last(t)
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
	if m.Token != "bob-fcm" || m.Android.Priority != "high" {
		t.Errorf("token, priority: got %q, %q, want bob-fcm, high", m.Token, m.Android.Priority)
	}
	n.FCMPriority = "normal"
	c.Send(context.Background(), Device{Kind: FCM, Token: "bob-fcm"}, n)
	if got := f.last(t).Android.Priority; got != "normal" {
		t.Errorf("priority normal: got %q", got)
	}
}

// TestFCMClient_AccessTokenKept checks the OAuth token's life: one
// exchange, kept until a minute before it expires, then a new one; a
// 401 drops it.
func TestFCMClient_AccessTokenKept(t *testing.T) {
	f := newFakeFCM(t)
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
		f.answer(step.status, "", "")
		send()
		if got := f.calls(); got != step.wantCalls {
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
	f := newFakeFCM(t)
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
			f.answer(tc.status, tc.body, tc.after)
			err := send()
			got, after := outcome(err)
			if got != tc.want || after != tc.wantRetryAfter {
				t.Errorf("got %s (Retry-After %v, %v), want %s (Retry-After %v)", got, after, err, tc.want, tc.wantRetryAfter)
			}
			wantNoSecret(t, err, f.access, privateKey)
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
		wantNoSecret(t, err, f.access, privateKey)
	})
	t.Run("the token exchange refused", func(t *testing.T) {
		f.mu.Lock()
		f.oauthFails = true
		f.mu.Unlock()
		now = now.Add(2 * time.Hour)
		err := send()
		if got, _ := outcome(err); got != "transient" || !strings.Contains(err.Error(), "FCM OAuth: 400") {
			t.Errorf("got %s (%v), want transient, FCM OAuth: 400", got, err)
		}
		wantNoSecret(t, err, f.access, privateKey, "assertion", "eyJ")
		f.mu.Lock()
		f.oauthFails = false
		f.mu.Unlock()
	})
	t.Run("no answer from the token exchange", func(t *testing.T) {
		f.srv.Close()
		err := send()
		if got, _ := outcome(err); got != "transient" {
			t.Errorf("got %s (%v), want transient", got, err)
		}
		wantNoSecret(t, err, f.access, privateKey, "eyJ")
	})
}

// TestNewFCMClient_Refusals checks what a service account key is refused
// for, without the key in the error.
func TestNewFCMClient_Refusals(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 1024)
	der, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	write := func(sa map[string]string) string {
		raw, _ := json.Marshal(sa)
		p := filepath.Join(t.TempDir(), "sa.json")
		os.WriteFile(p, raw, 0o600)
		return p
	}
	full := func(change func(map[string]string)) string {
		sa := map[string]string{"project_id": "proj", "client_email": testServiceAccount, "private_key": keyPEM, "token_uri": "https://oauth2.googleapis.com/token"}
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
