package pushtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The APNs fake's key id and team id, for the provider token.
const (
	APNsKeyID  = "ABC123DEFG"
	APNsTeamID = "TEAM456XYZ"
)

// APNs is Apple's endpoint on loopback, over HTTP/2 and TLS: it checks
// each request's path, headers, payload and provider token (ES256 of
// its key, APNsKeyID, APNsTeamID, issued within the hour), refusing an
// invalid token with 403 InvalidProviderToken.
type APNs struct {
	recorder
	key *ecdsa.PrivateKey

	clock func() time.Time // what "within the hour" is measured from
}

// NewAPNs starts an APNs fake, closed when the test ends.
func NewAPNs(t *testing.T) *APNs {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f := &APNs{recorder: newRecorder("APNs"), key: key, clock: time.Now}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	f.serveOn(t, srv)
	return f
}

// KeyFile writes the fake's key as Apple hands it out: a PKCS #8 .p8
// file.
func (f *APNs) KeyFile(t *testing.T) string {
	t.Helper()
	return writeFile(t, "AuthKey_"+APNsKeyID+".p8", []byte(KeyPEM(t, f.key)))
}

// SetClock makes provider tokens valid for an hour after their iat by
// now, for a client whose clock a test sets.
func (f *APNs) SetClock(now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock = now
}

func (f *APNs) serve(w http.ResponseWriter, r *http.Request) {
	req := received(r)
	refused := 0
	if r.ProtoMajor != 2 {
		f.violate("APNs request over %s, want HTTP/2", r.Proto)
	}
	token, ok := strings.CutPrefix(r.URL.Path, "/3/device/")
	req.Token = token
	jwt, bearer := strings.CutPrefix(r.Header.Get("authorization"), "bearer ")
	req.JWTValid = bearer && f.validJWT(jwt)
	switch {
	case r.Method != http.MethodPost || !ok || token == "":
		f.violate("APNs request %s %s", r.Method, r.URL.Path)
		refused = http.StatusNotFound
	case !req.JWTValid:
		f.violate("APNs authorization: not a valid ES256 provider token") // its value stays out of the output
		refused = http.StatusForbidden
	default:
		if r.Header.Get("apns-topic") == "" || r.Header.Get("apns-push-type") != "alert" || r.Header.Get("apns-expiration") == "" {
			f.violate("APNs headers: topic %q, push type %q, expiration %q", r.Header.Get("apns-topic"), r.Header.Get("apns-push-type"), r.Header.Get("apns-expiration"))
		}
		if err := json.Unmarshal(req.Raw, &req.Body); err != nil {
			f.violate("APNs body: %v", err)
		}
		if _, ok := req.Body["aps"].(map[string]any); !ok {
			f.violate("APNs body without aps: %v", req.Body)
		}
	}
	status, told := f.answer(req, refused)
	if told != nil && told.retryAfter != "" {
		w.Header().Set("Retry-After", told.retryAfter)
	}
	switch {
	case status == http.StatusOK:
		w.Header().Set("apns-id", "00000000-0000-0000-0000-000000000001")
	case told != nil:
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"reason":%q}`, told.text)
	case status == http.StatusNotFound:
		http.Error(w, `{"reason":"BadPath"}`, status)
	case status == http.StatusForbidden:
		w.WriteHeader(status)
		io.WriteString(w, `{"reason":"InvalidProviderToken"}`)
	case status == http.StatusGone:
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"reason":"Unregistered","timestamp":%d}`, time.Now().UnixMilli())
	default:
		w.WriteHeader(status)
		io.WriteString(w, `{"reason":"ServiceUnavailable"}`)
	}
}

func (f *APNs) validJWT(jwt string) bool {
	header, claims, digest, sig, ok := parseJWT(jwt)
	if !ok || len(sig) != 64 || header["alg"] != "ES256" || header["kid"] != APNsKeyID || claims["iss"] != APNsTeamID {
		return false
	}
	f.mu.Lock()
	now := f.clock()
	f.mu.Unlock()
	if iat, ok := claims["iat"].(float64); !ok || now.Sub(time.Unix(int64(iat), 0)) > time.Hour {
		return false
	}
	return ecdsa.Verify(&f.key.PublicKey, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
}
