package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestStateMembers_AreTheBytesOfEncodingTheMap: register's answer,
// written in parts from shared bytes, is byte for byte what encoding its
// state as a map gives, with and without ignored parameters.
func TestStateMembers_AreTheBytesOfEncodingTheMap(t *testing.T) {
	big := json.RawMessage(`[` + strings.Repeat(`{"full_name":"<b>&amp;</b> é","user_id":1},`, 200) + `null]`)
	state := map[string]any{
		"realm_users":    big,
		"small_raw":      json.RawMessage(`{"a":[1,2]}`),
		"queue_id":       "abc<>&",
		"zeta":           []int{3, 1},
		"a_map":          map[string]any{"y": true, "x": nil},
		"max_message_id": -1,
		"streams":        []streamObject{},
		"after_big":      big,
	}
	for _, ignored := range [][]string{nil, {"idle_queue_timeout"}} {
		parts, err := stateMembers(state)
		if err != nil {
			t.Fatal(err)
		}
		got, want := httptest.NewRecorder(), httptest.NewRecorder()
		if err := writeSuccess(got, parts, ignored); err != nil {
			t.Fatal(err)
		}
		if err := writeSuccess(want, state, ignored); err != nil {
			t.Fatal(err)
		}
		if got.Body.String() != want.Body.String() {
			t.Fatalf("ignored %v: got %s, want %s", ignored, got.Body, want.Body)
		}
		if cl := got.Header().Get("Content-Length"); cl != strconv.Itoa(got.Body.Len()) {
			t.Errorf("ignored %v: Content-Length got %s, want %d", ignored, cl, got.Body.Len())
		}
	}
}

// ownMembers are the members of register's answer that differ between
// answers: its queue and the time.
var ownMembers = regexp.MustCompile(`"(queue_id":"[^"]*|server_timestamp":[0-9.]+)`)

// TestRegister_SharedUserStateIsEveryChangeOfAnAccount: after any change
// of an account (a new one, an avatar, a deactivation), the next
// registration's answer is what a server that never encoded it before
// gives from the same store, for either client_gravatar, whether it
// comes from the shared bytes or not.
func TestRegister_SharedUserStateIsEveryChangeOfAnAccount(t *testing.T) {
	e := newTestEnv(t)
	answer := func(s *server, gravatar string) string {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, "/api/v1/register", strings.NewReader(url.Values{"client_gravatar": {gravatar}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(e.alice.Email, e.alice.key)
		rec := httptest.NewRecorder()
		s.routes().ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("register: got %d %s", rec.Code, rec.Body)
		}
		return ownMembers.ReplaceAllString(rec.Body.String(), `"own"`)
	}
	changes := []struct {
		name   string
		change func()
		seen   string // in the answers after it
	}{
		{"as it began", func() {}, `"full_name":"bob@example.com"`},
		{"a new account", func() { mustCreateUser(t, e.st, "carol@example.com", roleMember, false) }, `"email":"carol@example.com"`},
		{"an uploaded avatar", func() {
			if _, err := e.st.setAvatar(e.bob.user, "bobsmall", "bobmedium"); err != nil {
				t.Fatal(err)
			}
		}, `bobsmall.png`},
		{"a deactivation", func() {
			if err := e.st.setActive(e.admin.Email, false); err != nil {
				t.Fatal(err)
			}
		}, `"realm_non_active_users":[{"user_id":` + strconv.FormatUint(e.admin.ID, 10) + `,"email":"admin@example.com"`},
	}
	for _, c := range changes {
		c.change()
		for _, gravatar := range []string{"true", "false"} {
			first, again := answer(e.server, gravatar), answer(e.server, gravatar)
			hooks := e.st.hooks.Load()
			fresh := newServer(e.st, discardLogger(), "http://zulite.test", "zulite")
			e.st.hooks.Store(hooks)
			fresh.started = e.server.started
			want := answer(fresh, gravatar)
			for _, got := range []string{first, again} {
				if got != want {
					t.Fatalf("%s, client_gravatar=%s: got %s, want %s", c.name, gravatar, firstDifference(got, want), firstDifference(want, got))
				}
			}
			if !strings.Contains(want, c.seen) {
				t.Errorf("%s, client_gravatar=%s: %s not in the answer", c.name, gravatar, c.seen)
			}
		}
	}
}

// firstDifference is a from where it first differs from b, shortened.
func firstDifference(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	start := max(0, i-80)
	return "…" + a[start:min(len(a), i+120)] + "…"
}
