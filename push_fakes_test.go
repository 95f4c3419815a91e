package main

// Protocol peers for the push tests, on loopback: an APNs server over
// HTTP/2 and TLS that checks the provider token's ES256 signature and
// the headers; an FCM HTTP v1 endpoint with its OAuth token exchange
// (RS256 assertion); a push bouncer with Zulip's remotes routes. Each
// records what it was sent and can be told to fail.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
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

// pushDelivery is one request a fake provider answered.
type pushDelivery struct {
	Token  string
	Status int // what the fake answered
	Header http.Header
	Body   map[string]any // APNs: the wire payload; FCM: message.data; bouncer: the request
	At     time.Time
}

// fakeProvider holds what every fake shares.
type fakeProvider struct {
	srv *httptest.Server

	mu         sync.Mutex
	deliveries []pushDelivery
	failNext   map[string]int  // token → answers of 503 still to give
	gone       map[string]bool // token → the provider says it is dead
	violations []string
}

func (f *fakeProvider) violate(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.violations = append(f.violations, fmt.Sprintf(format, args...))
}

// setFail makes the next n deliveries to token answer 503.
func (f *fakeProvider) setFail(token string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext[token] = n
}

func (f *fakeProvider) setGone(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gone[token] = true
}

// answer decides the status for a delivery to token and records it.
func (f *fakeProvider) answer(token string, h http.Header, body map[string]any) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	status := http.StatusOK
	switch {
	case f.gone[token]:
		status = http.StatusGone
	case f.failNext[token] > 0:
		f.failNext[token]--
		status = http.StatusServiceUnavailable
	}
	f.deliveries = append(f.deliveries, pushDelivery{Token: token, Status: status, Header: h.Clone(), Body: body, At: time.Now()})
	return status
}

// sent is what was delivered (answered 200) to token, in order.
func (f *fakeProvider) sent(token string) []pushDelivery {
	return f.matching(func(d pushDelivery) bool { return d.Token == token && d.Status == http.StatusOK })
}

func (f *fakeProvider) matching(keep func(pushDelivery) bool) []pushDelivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []pushDelivery
	for _, d := range f.deliveries {
		if keep(d) {
			out = append(out, d)
		}
	}
	return out
}

func (f *fakeProvider) checkViolations(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, v := range f.violations {
		t.Errorf("protocol: %s", v)
	}
}

func newFakeProvider() *fakeProvider {
	return &fakeProvider{failNext: map[string]int{}, gone: map[string]bool{}}
}

// ---- APNs ----

type fakeAPNs struct {
	*fakeProvider
	key           *ecdsa.PrivateKey
	keyID, teamID string
}

func newFakeAPNs(t *testing.T) *fakeAPNs {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeAPNs{fakeProvider: newFakeProvider(), key: key, keyID: "ABC123DEFG", teamID: "TEAM456XYZ"}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.EnableHTTP2 = true
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

// keyFile writes the key as Apple hands it out: a PKCS #8 .p8 file.
func (f *fakeAPNs) keyFile(t *testing.T) string {
	der, err := x509.MarshalPKCS8PrivateKey(f.key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "AuthKey_"+f.keyID+".p8")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *fakeAPNs) serve(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 {
		f.violate("APNs request over %s, want HTTP/2", r.Proto)
	}
	token, ok := strings.CutPrefix(r.URL.Path, "/3/device/")
	if r.Method != http.MethodPost || !ok || token == "" {
		f.violate("APNs request %s %s", r.Method, r.URL.Path)
		http.Error(w, `{"reason":"BadPath"}`, http.StatusNotFound)
		return
	}
	jwt, ok := strings.CutPrefix(r.Header.Get("authorization"), "bearer ")
	if !ok || !f.validJWT(jwt) {
		f.violate("APNs authorization: not a valid ES256 provider token") // its value stays out of the output
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"reason":"InvalidProviderToken"}`)
		return
	}
	if r.Header.Get("apns-topic") == "" || r.Header.Get("apns-push-type") != "alert" || r.Header.Get("apns-expiration") == "" {
		f.violate("APNs headers: topic %q, push type %q, expiration %q", r.Header.Get("apns-topic"), r.Header.Get("apns-push-type"), r.Header.Get("apns-expiration"))
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.violate("APNs body: %v", err)
	}
	if _, ok := body["aps"].(map[string]any); !ok {
		f.violate("APNs body without aps: %v", body)
	}
	switch status := f.answer(token, r.Header, body); status {
	case http.StatusOK:
		w.Header().Set("apns-id", "00000000-0000-0000-0000-000000000001")
	case http.StatusGone:
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"reason":"Unregistered","timestamp":%d}`, time.Now().UnixMilli())
	default:
		w.WriteHeader(status)
		io.WriteString(w, `{"reason":"ServiceUnavailable"}`)
	}
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
	if header["alg"] != "ES256" || header["kid"] != f.keyID || claims["iss"] != f.teamID {
		return false
	}
	if iat, ok := claims["iat"].(float64); !ok || time.Since(time.Unix(int64(iat), 0)) > time.Hour {
		return false
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return false
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	return ecdsa.Verify(&f.key.PublicKey, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
}

func decodeJWTPart(s string, v any) bool {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && json.Unmarshal(raw, v) == nil
}

// ---- FCM ----

type fakeFCM struct {
	*fakeProvider
	key        *rsa.PrivateKey
	email      string
	access     string
	oauthCalls int
}

func newFakeFCM(t *testing.T) *fakeFCM {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeFCM{fakeProvider: newFakeProvider(), key: key, email: "zulite@proj.iam.gserviceaccount.com", access: "ya29.test-access-token"}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// credentialsFile writes a service account key as Google hands it out.
func (f *fakeFCM) credentialsFile(t *testing.T) string {
	der, err := x509.MarshalPKCS8PrivateKey(f.key)
	if err != nil {
		t.Fatal(err)
	}
	sa, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "proj", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": f.email, "token_uri": f.srv.URL + "/token",
	})
	p := filepath.Join(t.TempDir(), "service-account.json")
	if err := os.WriteFile(p, sa, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *fakeFCM) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/token":
		r.ParseForm()
		if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || !f.validAssertion(r.PostForm.Get("assertion")) {
			f.violate("OAuth exchange: grant_type %q, assertion not a valid RS256 JWT of the service account", r.PostForm.Get("grant_type"))
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.oauthCalls++
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"expires_in":3599,"token_type":"Bearer"}`, f.access)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/projects/proj/messages:send":
		if r.Header.Get("Authorization") != "Bearer "+f.access {
			f.violate("FCM send: Authorization is not the access token the exchange gave")
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var req struct {
			Message struct {
				Token   string         `json:"token"`
				Data    map[string]any `json:"data"`
				Android struct {
					Priority string `json:"priority"`
				} `json:"android"`
			} `json:"message"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Message.Token == "" {
			f.violate("FCM send body: %v", err)
		}
		for k, v := range req.Message.Data {
			if _, ok := v.(string); !ok {
				f.violate("FCM data %s: %v is not a string", k, v)
			}
		}
		data := req.Message.Data
		if data == nil {
			data = map[string]any{}
		}
		data["(android.priority)"] = req.Message.Android.Priority
		switch f.answer(req.Message.Token, r.Header, data) {
		case http.StatusOK:
			io.WriteString(w, `{"name":"projects/proj/messages/0:1"}`)
		case http.StatusGone:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}`)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"code":503,"status":"UNAVAILABLE"}}`)
		}
	default:
		f.violate("FCM request %s %s", r.Method, r.URL.Path)
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
	if header["alg"] != "RS256" || claims["iss"] != f.email || claims["aud"] != f.srv.URL+"/token" ||
		claims["scope"] != "https://www.googleapis.com/auth/firebase.messaging" {
		return false
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return false
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	return rsa.VerifyPKCS1v15(&f.key.PublicKey, crypto.SHA256, digest[:], sig) == nil
}

// ---- the bouncer ----

// fakeBouncer implements zilencer's remotes routes: server/register,
// push/register, push/unregister, push/notify.
type fakeBouncer struct {
	*fakeProvider
	orgID, orgKey string
	deleteNext    []string // android tokens push/notify reports deleted, once
}

func newFakeBouncer(t *testing.T) *fakeBouncer {
	f := &fakeBouncer{fakeProvider: newFakeProvider()}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// calls are the requests to one route ("push/notify", ...).
func (f *fakeBouncer) calls(route string) []pushDelivery {
	return f.matching(func(d pushDelivery) bool { return d.Token == route })
}

func (f *fakeBouncer) serve(w http.ResponseWriter, r *http.Request) {
	route, ok := strings.CutPrefix(r.URL.Path, "/api/v1/remotes/")
	if r.Method != http.MethodPost || !ok {
		f.violate("bouncer request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	body := map[string]any{}
	if route == "push/notify" {
		if r.Header.Get("Content-Type") != "application/json" {
			f.violate("push/notify Content-Type %q", r.Header.Get("Content-Type"))
		}
		json.NewDecoder(r.Body).Decode(&body)
	} else {
		r.ParseForm()
		for k := range r.PostForm {
			body[k] = r.PostForm.Get(k)
		}
	}
	if route == "server/register" {
		id, key := r.PostForm.Get("zulip_org_id"), r.PostForm.Get("zulip_org_key")
		if len(id) != 36 || len(key) != 64 || r.PostForm.Get("hostname") == "" || r.PostForm.Get("contact_email") == "" {
			f.violate("server/register: %v", r.PostForm)
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"result":"error","msg":"Invalid","code":"BAD_REQUEST"}`)
			return
		}
		f.mu.Lock()
		f.orgID, f.orgKey = id, key
		f.mu.Unlock()
		f.answer(route, r.Header, body)
		io.WriteString(w, `{"result":"success","msg":"","created":true}`)
		return
	}
	user, pass, ok := r.BasicAuth()
	f.mu.Lock()
	authorized := ok && user == f.orgID && pass == f.orgKey && f.orgID != ""
	f.mu.Unlock()
	if !authorized {
		f.violate("%s: basic auth %q is not the registered server's", route, user)
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"result":"error","msg":"Zulip server auth failure","code":"INVALID_ZULIP_SERVER"}`)
		return
	}
	switch route {
	case "push/register", "push/unregister":
		kind := r.PostForm.Get("token_kind")
		if r.PostForm.Get("user_id") == "" || r.PostForm.Get("token") == "" || (kind != "1" && kind != "2") ||
			(route == "push/register" && kind == "1" && r.PostForm.Get("ios_app_id") == "") {
			f.violate("%s: %v", route, r.PostForm)
		}
		f.answer(route, r.Header, body)
		io.WriteString(w, `{"result":"success","msg":""}`)
	case "push/notify":
		status := f.answer(route, r.Header, body)
		if status != http.StatusOK {
			w.WriteHeader(status)
			io.WriteString(w, `{"result":"error","msg":"Internal server error"}`)
			return
		}
		f.mu.Lock()
		deleted := f.deleteNext
		f.deleteNext = nil
		f.mu.Unlock()
		answer, _ := json.Marshal(map[string]any{"result": "success", "msg": "",
			"total_android_devices": len(body["android_devices"].([]any)), "total_apple_devices": len(body["apple_devices"].([]any)),
			"deleted_devices": map[string]any{"android_devices": append([]string{}, deleted...), "apple_devices": []string{}}})
		w.Write(answer)
	default:
		f.violate("bouncer route %s", route)
		http.NotFound(w, r)
	}
}

// ---- helpers ----

// trustFakes makes the child processes trust httptest's certificate.
func trustFakes(t *testing.T, srv *httptest.Server) {
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", p)
}

// waitFor polls cond for up to d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pushCall is one API call as a user, answering the status and body.
func pushCall(t *testing.T, base, email, key, method, path string, params url.Values) (int, map[string]any) {
	t.Helper()
	status, body, _ := e2eNewClient(base, email, key).do(t, method, path, params, e2ePython)
	return status, body
}
