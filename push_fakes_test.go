package main

// Helpers of the push tests. The protocol peers they drive (APNs, FCM,
// the bouncer) are internal/push/pushtest's fakes, which internal/push's
// own tests share.

import (
	"encoding/pem"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

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
