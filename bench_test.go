package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/bbolt"
)

// BenchmarkAuthenticate is the check every API request pays: parse the
// Basic header, hash the key, compare with the account's keys.
func BenchmarkAuthenticate(b *testing.B) {
	e := newBenchEnv(b)
	req := httptest.NewRequest(http.MethodGet, "/api/v1/users/me", nil)
	req.SetBasicAuth(e.alice.Email, e.alice.key)
	for b.Loop() {
		if _, err := e.server.authenticate(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRemoveAPNsToken is the first seed operation through the whole
// handler, commit and disk sync included.
func BenchmarkRemoveAPNsToken(b *testing.B) {
	e := newBenchEnv(b)
	i := 0
	for b.Loop() {
		b.StopTimer()
		token := fmt.Sprintf("%064x", i)
		i++
		if err := e.st.addPushToken(e.alice.ID, pushToken{Kind: pushAPNs, Token: token}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		e.serve(b, http.MethodDelete, "/api/v1/users/me/apns_device_token", "token="+token)
	}
}

// BenchmarkMarkStreamAsRead is the second seed operation through the whole
// handler, with 1 to 1,000,000 unread messages in the channel.
func BenchmarkMarkStreamAsRead(b *testing.B) {
	for _, n := range []int{1, 1_000, 100_000, 1_000_000} {
		b.Run("unread="+strconv.Itoa(n), func(b *testing.B) {
			e := newBenchEnv(b)
			ids := make([]uint64, n)
			for i := range ids {
				ids[i] = uint64(i + 1)
			}
			body := "stream_id=" + strconv.FormatUint(e.general.ID, 10)
			for b.Loop() {
				b.StopTimer()
				if err := e.st.db.Update(func(tx *bbolt.Tx) error { return addUnread(tx, e.alice.ID, e.general.ID, ids) }); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				e.serve(b, http.MethodPost, "/api/v1/mark_stream_as_read", body)
			}
		})
	}
}

type benchEnv struct {
	st      *store
	server  *server
	handler http.Handler
	alice   account
	general channel
}

func newBenchEnv(b *testing.B) *benchEnv {
	st := mustOpenStore(b)
	s := &server{store: st, log: discardLogger(), baseURL: "http://zulite.test", realmName: "zulite", maxBody: defaultMaxBody}
	u, key := mustCreateUser(b, st, "alice@example.com", roleMember, false)
	general := mustCreateChannel(b, st, "general", false)
	mustSubscribe(b, st, u, "general")
	return &benchEnv{st: st, server: s, handler: s.routes(), alice: account{u, key}, general: general}
}

func (e *benchEnv) serve(b *testing.B, method, path, body string) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(e.alice.Email, e.alice.key)
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("%s %s: got %d %s, want 200", method, path, rec.Code, rec.Body)
	}
}
