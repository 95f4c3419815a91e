package main

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestAuthentication_EveryFailure(t *testing.T) {
	e := newTestEnv(t)
	deactivated := account{}
	deactivated.user, deactivated.key = mustCreateUser(t, e.st, "gone@example.com", roleMember, false)
	if err := e.st.setActive("gone@example.com", false); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		rule, header string
		status       int
		code, msg    string
	}{
		{"no header", "", 401, "UNAUTHORIZED", "Not logged in: API authentication or user session required"},
		{"another scheme", "Bearer " + e.alice.key, 400, "BAD_REQUEST", "This endpoint requires HTTP basic authentication."},
		{"not base64", "Basic !!!", 401, "UNAUTHORIZED", "Invalid authorization header for basic auth"},
		{"no colon", "Basic " + base64.StdEncoding.EncodeToString([]byte("alice@example.com")), 401, "UNAUTHORIZED", "Invalid authorization header for basic auth"},
		{"key too short", basic(e.alice.Email, "abc"), 401, "UNAUTHORIZED", "Malformed API key"},
		{"key too long", basic(e.alice.Email, strings.Repeat("a", 33)), 401, "UNAUTHORIZED", "Malformed API key"},
		{"key not alphanumeric", basic(e.alice.Email, strings.Repeat("-", 32)), 401, "UNAUTHORIZED", "Malformed API key"},
		{"wrong key", basic(e.alice.Email, newAPIKey()), 401, "UNAUTHORIZED", "Invalid API key"},
		{"another account's key", basic(e.alice.Email, e.bob.key), 401, "UNAUTHORIZED", "Invalid API key"},
		{"unknown e-mail", basic("nobody@example.com", e.alice.key), 401, "UNAUTHORIZED", "Invalid API key"},
		{"deactivated account", basic(deactivated.Email, deactivated.key), 401, "UNAUTHORIZED", "Account is deactivated"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			req := buildRequest(t, urlencoded, http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {"ab"}})
			if c.header != "" {
				req.Header.Set("Authorization", c.header)
			}
			r := e.do(t, req)
			wantAPIError(t, r, c.status, c.code, c.msg)
			wantHeader := ""
			if c.status == 401 {
				wantHeader = `Basic realm="zulip"`
			}
			if got := r.header.Get("WWW-Authenticate"); got != wantHeader {
				t.Errorf("WWW-Authenticate: got %q, want %q", got, wantHeader)
			}
			if strings.Contains(r.raw, e.alice.key) {
				t.Errorf("the answer repeats the API key")
			}
			for _, a := range []account{e.alice, deactivated} {
				if got := e.tokens(t, a); len(got) != 0 {
					t.Errorf("%s's tokens after a refused request: got %v, want none", a.Email, got)
				}
			}
		})
	}
	r := e.request(t, http.MethodGet, "/api/v1/users/me", nil, &account{user{Email: "ALICE@example.COM"}, e.alice.key})
	wantAPISuccess(t, r)
	if r.body["user_id"] != float64(e.alice.ID) {
		t.Errorf("e-mail matched case-insensitively: got user %v, want %d", r.body["user_id"], e.alice.ID)
	}
}
