package main

import (
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestServerSettings_ZulipFieldsAndNoOthers(t *testing.T) {
	e := newTestEnv(t)
	r := e.request(t, http.MethodGet, "/api/v1/server_settings", nil, nil)
	wantAPISuccess(t, r)
	want := []string{"authentication_methods", "email_auth_enabled", "external_authentication_methods", "is_incompatible", "msg",
		"push_notifications_enabled", "realm_description", "realm_icon", "realm_name", "realm_uri", "realm_url",
		"realm_web_public_access_enabled", "require_email_format_usernames", "result", "zulip_feature_level", "zulip_merge_base", "zulip_version"}
	var got []string
	for k := range r.body {
		got = append(got, k)
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("fields: got %v, want %v", got, want)
	}
	if level := r.body["zulip_feature_level"].(float64); level < 277 {
		t.Errorf("feature level: got %v, want at least 277", level)
	}
	if r.body["realm_url"] != "http://zulite.test" || r.body["realm_uri"] != "http://zulite.test" || r.body["push_notifications_enabled"] != false {
		t.Errorf("realm_url/realm_uri/push: got %s", r.raw)
	}
	// The values a client decides on before it logs in: a compatible
	// Zulip 9.2 (feature level 278, a real release's pair), e-mail and
	// password login only, and the realm as configured.
	for field, want := range map[string]any{
		"is_incompatible": false, "zulip_version": "9.2", "zulip_merge_base": "9.2", "zulip_feature_level": float64(278),
		"email_auth_enabled": true, "require_email_format_usernames": true, "realm_web_public_access_enabled": false,
		"realm_name": "zulite", "realm_description": "",
	} {
		if r.body[field] != want {
			t.Errorf("%s: got %#v, want %#v", field, r.body[field], want)
		}
	}
	methods, _ := r.body["authentication_methods"].(map[string]any)
	for method, enabled := range methods {
		if enabled != (method == "password") {
			t.Errorf("authentication_methods.%s: got %v, want %v", method, enabled, method == "password")
		}
	}
	if methods["password"] != true {
		t.Errorf("authentication_methods: got %v, want password enabled", methods)
	}
	if !strings.Contains(r.raw, `"external_authentication_methods":[]`) { // a list, never null
		t.Errorf("external_authentication_methods: got %s", r.raw)
	}
	if icon, _ := r.body["realm_icon"].(string); !strings.HasPrefix(icon, "http://zulite.test/") {
		t.Errorf("realm_icon: got %q, want a URL on the realm", r.body["realm_icon"])
	}
}

func TestOwnUser_RolesAsZulipNumbersThem(t *testing.T) {
	e := newTestEnv(t)
	for _, c := range []struct {
		who            *account
		role           float64
		isAdmin, isBot bool
	}{
		{&e.owner, 100, true, false},
		{&e.admin, 200, true, false},
		{&e.alice, 400, false, false},
		{&e.bot, 400, false, true},
	} {
		r := e.request(t, http.MethodGet, "/api/v1/users/me", nil, c.who)
		wantAPISuccess(t, r)
		if r.body["role"] != c.role || r.body["is_admin"] != c.isAdmin || r.body["is_bot"] != c.isBot ||
			r.body["email"] != c.who.Email || r.body["user_id"] != float64(c.who.ID) || r.body["full_name"] != c.who.FullName {
			t.Errorf("%s: got %s, want role %v, is_admin %v, is_bot %v", c.who.Email, r.raw, c.role, c.isAdmin, c.isBot)
		}
	}
}
