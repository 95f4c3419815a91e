package pushtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The FCM fake's service account and the access token its exchange
// gives.
const (
	FCMServiceAccount = "zulite@proj.iam.gserviceaccount.com"
	FCMAccessToken    = "ya29.test-access-token"
)

// FCM is FCM's HTTP v1 endpoint and its OAuth token exchange on
// loopback: the exchange checks the jwt-bearer grant's RS256 assertion
// (the service account's, for this endpoint and FCM's scope, an hour
// long), a send checks that it carries the access token, a token and
// data of strings.
type FCM struct {
	recorder
	key *rsa.PrivateKey

	oauthCalls  int
	refuseOAuth bool
}

// NewFCM starts an FCM fake, closed when the test ends.
func NewFCM(t *testing.T) *FCM {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	f := &FCM{recorder: newRecorder("FCM"), key: key}
	f.serveOn(t, httptest.NewTLSServer(http.HandlerFunc(f.serve)))
	return f
}

// CredentialsFile writes a service account key as Google hands it out,
// its token_uri the fake's exchange.
func (f *FCM) CredentialsFile(t *testing.T) string {
	t.Helper()
	sa, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "proj", "private_key_id": "k1",
		"private_key":  f.PrivateKeyPEM(t),
		"client_email": FCMServiceAccount, "token_uri": f.URL + "/token",
	})
	return writeFile(t, "service-account.json", sa)
}

// PrivateKeyPEM is the service account's private key as its file holds
// it.
func (f *FCM) PrivateKeyPEM(t *testing.T) string {
	t.Helper()
	return KeyPEM(t, f.key)
}

// RefuseOAuth makes the token exchange answer 400 invalid_grant, or
// stop doing so.
func (f *FCM) RefuseOAuth(refuse bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuseOAuth = refuse
}

// OAuthCalls is how many token exchanges were asked for.
func (f *FCM) OAuthCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.oauthCalls
}

func (f *FCM) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/token":
		r.ParseForm()
		f.mu.Lock()
		f.oauthCalls++
		refuse := f.refuseOAuth
		f.mu.Unlock()
		if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || !f.validAssertion(r.PostForm.Get("assertion")) {
			f.violate("OAuth exchange: grant_type %q, assertion not a valid RS256 JWT of the service account", r.PostForm.Get("grant_type"))
			refuse = true
		}
		if refuse {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"expires_in":3599,"token_type":"Bearer"}`, FCMAccessToken)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/projects/proj/messages:send":
		req := received(r)
		var send struct {
			Message struct {
				Token   string         `json:"token"`
				Data    map[string]any `json:"data"`
				Android struct {
					Priority string `json:"priority"`
				} `json:"android"`
			} `json:"message"`
		}
		if err := json.Unmarshal(req.Raw, &send); err != nil || send.Message.Token == "" {
			f.violate("FCM send body: %v", err)
		}
		req.Token, req.Data, req.Priority = send.Message.Token, send.Message.Data, send.Message.Android.Priority
		req.Body = map[string]any{"(android.priority)": req.Priority}
		for k, v := range req.Data {
			if _, ok := v.(string); !ok {
				f.violate("FCM data %s: %v is not a string", k, v)
			}
			req.Body[k] = v
		}
		refused := 0
		if r.Header.Get("Authorization") != "Bearer "+FCMAccessToken {
			f.violate("FCM send: Authorization is not the access token the exchange gave")
			refused = http.StatusUnauthorized
		}
		status, told := f.answer(req, refused)
		if told != nil && told.retryAfter != "" {
			w.Header().Set("Retry-After", told.retryAfter)
		}
		switch {
		case status == http.StatusOK:
			io.WriteString(w, `{"name":"projects/proj/messages/0:1"}`)
		case told != nil:
			w.WriteHeader(status)
			io.WriteString(w, told.text)
		case status == http.StatusUnauthorized:
			w.WriteHeader(status)
		case status == http.StatusGone:
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

func (f *FCM) validAssertion(jwt string) bool {
	header, claims, digest, sig, ok := parseJWT(jwt)
	if !ok {
		return false
	}
	iat, _ := claims["iat"].(float64)
	exp, _ := claims["exp"].(float64)
	if header["alg"] != "RS256" || header["typ"] != "JWT" || claims["iss"] != FCMServiceAccount || claims["aud"] != f.URL+"/token" ||
		claims["scope"] != "https://www.googleapis.com/auth/firebase.messaging" || exp-iat != 3600 {
		return false
	}
	return rsa.VerifyPKCS1v15(&f.key.PublicKey, crypto.SHA256, digest[:], sig) == nil
}
