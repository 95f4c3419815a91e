package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHostileClients_CutOffAndRefused runs the binary with short read
// timeouts and misbehaves at it over raw sockets.
func TestHostileClients_CutOffAndRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	bin := e2eBuildBinary(t)
	srv := e2eStartServer(t, bin, filepath.Join(t.TempDir(), "z.db"), "--read-header-timeout", "500ms", "--read-timeout", "1s")
	key := srv.ownerKey
	auth := basic("owner@zulite.localhost", key)
	addr := strings.TrimPrefix(srv.baseURL, "http://")

	// dial connects, and sends the start of a request unless format is
	// empty; a failure to do either would leave nothing for the server to
	// cut off or refuse.
	dial := func(t *testing.T, format string, args ...any) net.Conn {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if format == "" {
			return conn
		}
		if _, err := fmt.Fprintf(conn, format, args...); err != nil {
			t.Fatal(err)
		}
		return conn
	}
	// closedWithin reports whether the server ends the connection within d.
	closedWithin := func(t *testing.T, conn net.Conn, d time.Duration) bool {
		t.Helper()
		if err := conn.SetReadDeadline(time.Now().Add(d)); err != nil {
			t.Fatal(err)
		}
		_, err := io.ReadAll(conn) // until the server closes (or answers, then closes)
		return err == nil
	}
	t.Run("slow headers are cut off", func(t *testing.T) {
		conn := dial(t, "GET /api/v1/users/me HTTP/1.1\r\nHost: x\r\n") // never finished
		if !closedWithin(t, conn, 5*time.Second) {
			t.Errorf("a connection with unfinished headers was still open after 5 s")
		}
	})
	t.Run("slow bodies are cut off", func(t *testing.T) {
		conn := dial(t, "POST /api/v1/users/me/apns_device_token HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ntoken=", auth)
		if !closedWithin(t, conn, 5*time.Second) {
			t.Errorf("a connection with an unfinished body was still open after 5 s")
		}
	})
	t.Run("a declared oversized body is refused unread", func(t *testing.T) {
		conn := dial(t, "POST /api/v1/users/me/apns_device_token HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n", auth, 100<<20)
		if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil) // answered before any of the 100 MiB
		if err != nil || resp.StatusCode != 413 {
			t.Fatalf("got %v %v, want 413 without sending the body", resp, err)
		}
	})
	t.Run("oversized headers are refused", func(t *testing.T) {
		conn := dial(t, "")
		// The server may refuse before it has read all 200 KiB, so the
		// write may fail; the 431 is what counts.
		fmt.Fprintf(conn, "GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 200<<10))
		if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("got %v %v, want 431", resp, err)
		}
	})
	client := rtClient{srv.baseURL, "owner@zulite.localhost", key, &http.Client{Timeout: 10 * time.Second}}
	for _, c := range []struct {
		rule, method, path string
		params             url.Values
		msg                string
	}{
		{"too many parameters", http.MethodPost, "/api/v1/users/me/apns_device_token", manyParams(1001), "Too many parameters"},
		{"invalid UTF-8", http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {"ab\xff"}}, `Invalid UTF-8 in parameter "token"`},
		{"a NUL byte in a token", http.MethodPost, "/api/v1/users/me/android_gcm_reg_id", url.Values{"token": {"a\x00b"}}, "Empty or invalid length token"},
		{"a NUL byte in content", http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"x"}, "topic": {"t"}, "content": {"a\x00"}}, "Message must not contain null bytes"},
		{"a huge integer", http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {"1" + strings.Repeat("0", 400)}}, "stream_id is not an integer"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			code, body := client.call(t, c.method, c.path, c.params)
			if code != 400 || body["msg"] != c.msg {
				t.Errorf("got %d %v, want 400 %q", code, body["msg"], c.msg)
			}
		})
	}
	code, body := client.call(t, http.MethodGet, "/api/v1/users/me", nil)
	if code != 200 {
		t.Errorf("after all that the server answers %d %v, want 200", code, body)
	}
}

func manyParams(n int) url.Values {
	p := url.Values{"token": {"ab"}}
	for i := range n {
		p.Set(fmt.Sprintf("p%d", i), "x")
	}
	return p
}
