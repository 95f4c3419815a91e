package conns

import (
	"bufio"
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// pollPaths are the paths of zulite's polls, as its server names them.
var pollPaths = []string{"/api/v1/events", "/json/events"}

// nextPoll reads as a poll only what it checks as strictly as net/http;
// anything else is net/http's to read.
func TestNextPoll_TakesOnlyPlainPolls(t *testing.T) {
	const poll = "GET /api/v1/events?queue_id=ab&last_event_id=3 HTTP/1.1\r\nHost: zulite.test:9991\r\nAuthorization: Basic eDp5\r\nUser-Agent: ZulipMobile/1.0\r\n\r\n"
	r := nextPoll([]byte(poll), pollPaths)
	if r == nil || r.URL.Path != "/api/v1/events" || r.URL.Query().Get("last_event_id") != "3" || r.Host != "zulite.test:9991" ||
		r.Header.Get("Authorization") != "Basic eDp5" || r.Header.Get("User-Agent") != "ZulipMobile/1.0" || r.Close {
		t.Fatalf("a plain poll: %+v", r)
	}
	if r := nextPoll([]byte(strings.Replace(poll, "\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1)), pollPaths); r == nil || !r.Close {
		t.Fatalf("Connection: close: %+v", r)
	}
	if r := nextPoll([]byte(strings.Replace(poll, "/api/v1/events", "/json/events", 1)), pollPaths); r == nil {
		t.Fatal("the web client's poll was refused")
	}
	for name, req := range map[string]string{
		"another route":       strings.Replace(poll, "/api/v1/events", "/api/v1/users/me", 1),
		"another method":      strings.Replace(poll, "GET ", "POST ", 1),
		"HTTP/1.0":            strings.Replace(poll, "HTTP/1.1", "HTTP/1.0", 1),
		"no Host":             strings.Replace(poll, "Host: zulite.test:9991\r\n", "", 1),
		"two Hosts":           strings.Replace(poll, "\r\n\r\n", "\r\nHost: other\r\n\r\n", 1),
		"a bad Host":          strings.Replace(poll, "zulite.test:9991", "zulite.test/x", 1),
		"a body announced":    strings.Replace(poll, "\r\n\r\n", "\r\nContent-Length: 0\r\n\r\n", 1),
		"chunked":             strings.Replace(poll, "\r\n\r\n", "\r\nTransfer-Encoding: chunked\r\n\r\n", 1),
		"an upgrade":          strings.Replace(poll, "\r\n\r\n", "\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n", 1),
		"Expect":              strings.Replace(poll, "\r\n\r\n", "\r\nExpect: 100-continue\r\n\r\n", 1),
		"a folded header":     strings.Replace(poll, "\r\nUser-Agent", "\r\n X-Folded: x\r\nUser-Agent", 1),
		"a space in a name":   strings.Replace(poll, "User-Agent:", "User Agent:", 1),
		"a control in value":  strings.Replace(poll, "ZulipMobile", "Zulip\x01Mobile", 1),
		"a bare LF":           strings.Replace(poll, "\r\nUser-Agent", "\nUser-Agent", 1),
		"a space in target":   strings.Replace(poll, "queue_id=ab", "queue_id=a b", 1),
		"not ended":           strings.TrimSuffix(poll, "\r\n"),
		"pipelined":           poll + poll,
		"a second line first": "\r\n" + poll,
	} {
		if r := nextPoll([]byte(req), pollPaths); r != nil {
			t.Errorf("%s: read as a poll", name)
		}
	}
}

// FuzzNextPoll checks nextPoll against net/http: whatever it reads as a
// poll, net/http reads as the same request (method, target, Host,
// headers, Connection: close), without a body and with nothing left over.
func FuzzNextPoll(f *testing.F) {
	const poll = "GET /api/v1/events?queue_id=ab&last_event_id=3 HTTP/1.1\r\nHost: zulite.test:9991\r\nAuthorization: Basic eDp5\r\nUser-Agent: ZulipMobile/1.0\r\n\r\n"
	for _, seed := range []string{
		poll,
		strings.Replace(poll, "/api/v1/events", "/json/events", 1),
		strings.Replace(poll, "\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1),
		strings.Replace(poll, "\r\n\r\n", "\r\nContent-Length: 4\r\n\r\nbody", 1),
		strings.Replace(poll, "\r\nUser-Agent", "\r\n User-Agent", 1),
		strings.Replace(poll, "Host: zulite.test:9991\r\n", "Host: [::1]:9991\r\nX-Forwarded-For: 10.0.0.1\r\n", 1),
		"GET /api/v1/events HTTP/1.1\r\nHost: a\r\nCookie: s=1; t=2\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := nextPoll(b, pollPaths)
		if got == nil {
			return
		}
		r := bufio.NewReader(bytes.NewReader(b))
		want, err := http.ReadRequest(r)
		if err != nil {
			t.Fatalf("nextPoll read %q; net/http refuses it: %v", b, err)
		}
		if r.Buffered() != 0 || want.ContentLength != 0 || len(want.TransferEncoding) != 0 {
			t.Fatalf("nextPoll read %q; net/http sees a body or more (%d left, length %d)", b, r.Buffered(), want.ContentLength)
		}
		if got.Method != want.Method || got.URL.String() != want.URL.String() || got.RequestURI != want.RequestURI || got.Host != want.Host ||
			got.Close != want.Close || got.ProtoMinor != want.ProtoMinor || !reflect.DeepEqual(got.Header, want.Header) {
			t.Fatalf("%q: nextPoll read %s %s host %q close %v %v; net/http %s %s host %q close %v %v", b,
				got.Method, got.URL, got.Host, got.Close, got.Header, want.Method, want.URL, want.Host, want.Close, want.Header)
		}
	})
}
