package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// drive sends every request once, and a status other than the one
// wanted fails the run, naming it.
func TestDrive_EveryRequestOnceAndAnUnexpectedStatusFails(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		if r.URL.Path == "/teapot" {
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	defer srv.Close()
	z := &target{base: srv.URL}
	r := drive(z, 8, 200, http.StatusOK, func(i int) *http.Request {
		return newRequest(z, http.MethodGet, "/fine", nil, "a@example.com", "key")
	})
	if r.err != nil || served.Load() != 200 || r.rps <= 0 || r.p99 < r.p50 {
		t.Errorf("200 requests answered 200: got err %v, %d served, %.0f req/s, p50 %v p99 %v; want no error, 200 served", r.err, served.Load(), r.rps, r.p50, r.p99)
	}
	r = drive(z, 4, 20, http.StatusOK, func(i int) *http.Request {
		if i == 7 {
			return newRequest(z, http.MethodGet, "/teapot", nil, "a@example.com", "key")
		}
		return newRequest(z, http.MethodGet, "/fine", nil, "a@example.com", "key")
	})
	if r.err == nil || !strings.Contains(r.err.Error(), "/teapot: got status 418, want 200") {
		t.Errorf("one request answered 418: got err %v, want it named", r.err)
	}
}
