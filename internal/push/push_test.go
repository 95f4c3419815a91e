package push

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

// outcome is how the outbox reads a client's answer: "ok", "dead",
// "transient" (with its Retry-After) or "failed".
func outcome(err error) (string, time.Duration) {
	var transient *TransientError
	var dead *DeadTokenError
	switch {
	case err == nil:
		return "ok", 0
	case errors.As(err, &dead):
		return "dead", 0
	case errors.As(err, &transient):
		return "transient", transient.RetryAfter
	}
	return "failed", 0
}

// wantNoSecret fails when err's text holds any of the secrets.
func wantNoSecret(t *testing.T, err error, secrets ...string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("error %q holds a credential", err)
		}
	}
}

// trust makes the transport trust srv's certificate.
func trust(tr *http.Transport, srv *httptest.Server) {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
}

// sameJSON fails when got and want are not the same JSON value.
func sameJSON(t *testing.T, name string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", name, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: the wanted JSON: %v", name, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\ngot  %s\nwant %s", name, got, want)
	}
}

// A request that gets no answer fails without the URL's path: APNs puts
// the device token there, and the outbox logs the error.
func TestPostToProvider_NoAnswerNamesNoPath(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/3/device/deadbeefSECRETTOKEN", nil)
	_, _, _, err = postToProvider(&http.Client{}, req, 1024)
	if err == nil || strings.Contains(err.Error(), "SECRETTOKEN") || !strings.Contains(err.Error(), addr) {
		t.Errorf("no answer: got %v, want an error naming %s and not the token", err, addr)
	}
}
