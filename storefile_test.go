package main

import (
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Issue 35, item 7: a 32-bit build maps at most 2 GiB of database, so the
// file may grow to 2 GiB less 16 MiB there, and without a bound on 64-bit.
func TestDatabaseSizeLimit_32BitBuildsStayInsideTheirMap(t *testing.T) {
	if got, want := databaseSizeLimit(32), 2<<30-16<<20; got != want || got > 0x7FFFFFFF {
		t.Errorf("32-bit limit: got %d, want %d, under bbolt's MaxMapSize 0x7FFFFFFF", got, want)
	}
	if got := databaseSizeLimit(64); got != 0 {
		t.Errorf("64-bit limit: got %d, want 0 (none)", got)
	}
}

// Issue 35, item 7: at the size limit a write is refused, 500 with the
// cause logged (what happened and what to do), nothing of it is kept, and
// the server goes on reading and writing what fits. The limit is set to
// the file's size here, so that amd64 meets it as a 32-bit board would.
func TestDatabaseSizeLimit_AWritePastItIsRefusedAndTheServerGoesOn(t *testing.T) {
	e := newTestEnv(t)
	var logged syncBuffer
	e.server.log = slog.New(slog.NewTextHandler(&logged, nil))
	fi, err := os.Stat(e.st.db.Path())
	if err != nil {
		t.Fatal(err)
	}
	e.st.db.MaxSize = int(fi.Size())
	send := func(content string) response {
		return e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"big"}, "content": {content}}, &e.alice)
	}
	sent, refused, last := 0, response{}, 0.0
	for i := range 1000 { // 9 KB each: the file's free pages run out long before
		r := send(strings.Repeat("x", 9000) + " " + string(rune('a'+i%26)))
		if r.status != 200 {
			refused = r
			break
		}
		sent, last = sent+1, r.body["id"].(float64)
	}
	if refused.status != 500 || refused.str("msg") != "Internal server error" || refused.str("result") != "error" {
		t.Fatalf("a send past the limit, after %d sent: got %d %v, want 500 Internal server error", sent, refused.status, refused.body)
	}
	if !strings.Contains(logged.String(), "the most this build lets it grow to") || !strings.Contains(logged.String(), "64-bit build") {
		t.Errorf("log after the refused send: got %q, want the cause and what to do", logged.String())
	}
	if fi, err := os.Stat(e.st.db.Path()); err != nil || fi.Size() > int64(e.st.db.MaxSize) {
		t.Errorf("database file: got %v, %v; want at most %d bytes", fi.Size(), err, e.st.db.MaxSize)
	}
	r := e.request(t, http.MethodGet, "/api/v1/messages", url.Values{"anchor": {"newest"}, "num_before": {"1000"}, "num_after": {"0"}, "narrow": {`[{"operator":"topic","operand":"big"}]`}}, &e.alice)
	if msgs, _ := r.body["messages"].([]any); r.status != 200 || len(msgs) != sent {
		t.Errorf("messages after the refused send: got %d, %d messages; want 200 and the %d sent", r.status, len(msgs), sent)
	}
	if sent == 0 {
		t.Fatalf("got no send within the limit, want some: the file had free pages")
	}
	// A reaction fits in the pages earlier commits freed.
	if r := e.request(t, http.MethodPost, "/api/v1/messages/"+strconv.FormatFloat(last, 'f', 0, 64)+"/reactions", url.Values{"emoji_name": {"smile"}}, &e.bob); r.status != 200 {
		t.Errorf("a small write after the refused send: got %d %v, want 200", r.status, r.body)
	}
}
