package main

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
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
	// Zulip 11.0 (feature level 421, a real release's pair), e-mail and
	// password login only, and the realm as configured.
	for field, want := range map[string]any{
		"is_incompatible": false, "zulip_version": "11.0", "zulip_merge_base": "11.0", "zulip_feature_level": float64(421),
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

// userFields are the keys of a user object at feature level 421, for a
// human asked without and with profile data.
var userFields = []string{"avatar_url", "avatar_version", "date_joined", "delivery_email", "email", "full_name", "is_active", "is_admin",
	"is_bot", "is_guest", "is_owner", "role", "timezone", "user_id"}

func keysOf(m map[string]any) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestUserObjects_Zulip421Fields(t *testing.T) {
	e := newTestEnv(t)
	withProfile := append(slices.Clone(userFields), "profile_data")
	sort.Strings(withProfile)
	botFields := append(slices.Clone(userFields), "bot_owner_id", "bot_type")
	sort.Strings(botFields)
	meFields := append(slices.Clone(withProfile), "max_message_id", "msg", "result")
	sort.Strings(meFields)

	r := e.request(t, http.MethodGet, "/api/v1/users/me", nil, &e.alice)
	wantAPISuccess(t, r)
	if got := keysOf(r.body); !slices.Equal(got, meFields) {
		t.Errorf("GET /users/me fields: got %v, want %v", got, meFields)
	}
	if url, _ := r.body["avatar_url"].(string); !strings.HasPrefix(url, "/user_avatars/default/") {
		t.Errorf("GET /users/me avatar_url: got %v, want the URL of the served default (Zulip computes it for the caller)", r.body["avatar_url"])
	}
	// Zulip's isoformat(timespec="minutes") in UTC, and the rest as Zulip sends them.
	for k, v := range map[string]any{"date_joined": time.Unix(e.alice.Joined, 0).UTC().Format("2006-01-02T15:04") + "+00:00",
		"timezone": "", "avatar_version": 1.0, "is_active": true, "delivery_email": e.alice.Email, "max_message_id": -1.0} {
		if r.body[k] != v {
			t.Errorf("GET /users/me %s: got %#v, want %#v", k, r.body[k], v)
		}
	}
	if _, err := time.Parse("2006-01-02T15:04-07:00", r.str("date_joined")); err != nil {
		t.Errorf("date_joined %q is not ISO 8601: %v", r.str("date_joined"), err)
	}

	r = e.request(t, http.MethodGet, "/api/v1/users", nil, &e.alice)
	wantAPISuccess(t, r)
	members := r.body["members"].([]any)
	if len(members) != 5 {
		t.Fatalf("GET /users: got %d members, want 5", len(members))
	}
	for _, m := range members {
		u := m.(map[string]any)
		want := userFields
		if u["is_bot"] == true {
			want = botFields
			if u["bot_owner_id"] != nil || u["bot_type"] != 1.0 {
				t.Errorf("bot: got bot_owner_id %v bot_type %v, want null and 1", u["bot_owner_id"], u["bot_type"])
			}
		}
		if got := keysOf(u); !slices.Equal(got, want) {
			t.Errorf("GET /users member %v fields: got %v, want %v", u["email"], got, want)
		}
		if u["avatar_url"] != nil {
			t.Errorf("GET /users with the default client_gravatar=true: avatar_url got %v, want null", u["avatar_url"])
		}
	}
	r = e.request(t, http.MethodGet, "/api/v1/users", url.Values{"client_gravatar": {"false"}, "include_custom_profile_fields": {"true"}}, &e.alice)
	u := r.body["members"].([]any)[0].(map[string]any)
	if got := keysOf(u); !slices.Equal(got, withProfile) || u["avatar_url"] == nil || !jsonEqual(u["profile_data"], map[string]any{}) {
		t.Errorf("client_gravatar=false, include_custom_profile_fields=true: got %v", u)
	}
}

func TestListUsers_UserIDs(t *testing.T) {
	e := newTestEnv(t)
	for _, c := range []struct {
		rule, ids string
		want      []uint64
	}{
		{"a subset, in id order", jsonIDs(e.bob.ID, e.alice.ID), []uint64{e.alice.ID, e.bob.ID}},
		{"unknown ids are left out", jsonIDs(e.alice.ID, 999), []uint64{e.alice.ID}},
		{"an empty list names nobody", "[]", nil},
	} {
		r := e.request(t, http.MethodGet, "/api/v1/users", url.Values{"user_ids": {c.ids}}, &e.bob)
		wantAPISuccess(t, r)
		var got []uint64
		for _, m := range r.body["members"].([]any) {
			got = append(got, uint64(m.(map[string]any)["user_id"].(float64)))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.rule, got, c.want)
		}
	}
	for _, c := range []struct{ ids, msg string }{
		{"7", "user_ids is not a list"},
		{`[1,"a"]`, "user_ids[1] is not an integer"},
		{"x", "user_ids is not valid JSON"},
	} {
		wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/users", url.Values{"user_ids": {c.ids}}, &e.bob), 400, "BAD_REQUEST", c.msg)
	}
}

func TestGetUser_ByIDAndByEmail(t *testing.T) {
	e := newTestEnv(t)
	if err := e.st.setActive(e.bob.Email, false); err != nil {
		t.Fatal(err)
	}
	id := func(a account) string { return strconv.FormatUint(a.ID, 10) }
	for _, c := range []struct {
		rule, path string
		params     url.Values
		want       account
		active     bool
	}{
		{"by id", "/api/v1/users/" + id(e.alice), nil, e.alice, true},
		{"by e-mail, without case", "/api/v1/users/ALICE@example.com", nil, e.alice, true},
		{"a deactivated user", "/api/v1/users/" + id(e.bob), nil, e.bob, false},
		{"a bot", "/api/v1/users/" + e.bot.Email, nil, e.bot, true},
		{"with profile data", "/api/v1/users/" + id(e.owner), url.Values{"include_custom_profile_fields": {"true"}, "client_gravatar": {"false"}}, e.owner, true},
	} {
		t.Run(c.rule, func(t *testing.T) {
			r := e.request(t, http.MethodGet, c.path, c.params, &e.admin)
			wantAPISuccess(t, r)
			u, _ := r.body["user"].(map[string]any)
			if u["user_id"] != float64(c.want.ID) || u["email"] != c.want.Email || u["is_active"] != c.active {
				t.Errorf("got %s, want user %d active %v", r.raw, c.want.ID, c.active)
			}
			_, hasProfile := u["profile_data"]
			if hasProfile != (c.params != nil) || (u["avatar_url"] == nil) != (c.params == nil) {
				t.Errorf("profile_data present %v, avatar_url %v: want them only as asked", hasProfile, u["avatar_url"])
			}
		})
	}
	for _, path := range []string{"/api/v1/users/999", "/api/v1/users/0", "/api/v1/users/99999999999999999999999", "/api/v1/users/nobody@example.com", "/api/v1/users/-1"} {
		wantAPIError(t, e.request(t, http.MethodGet, path, nil, &e.alice), 400, "BAD_REQUEST", "No such user")
	}
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/users/1", url.Values{"client_gravatar": {"maybe"}}, &e.alice), 400, "BAD_REQUEST", "client_gravatar is not valid JSON")
	r := e.request(t, http.MethodPut, "/api/v1/users/"+id(e.alice), nil, &e.alice)
	wantAPIError(t, r, 405, "", "Method Not Allowed")
	if r.header.Get("Allow") != "DELETE, GET, PATCH" {
		t.Errorf("Allow: got %q, want DELETE, GET, PATCH", r.header.Get("Allow"))
	}
	r = e.request(t, http.MethodPatch, "/api/v1/users/"+e.alice.Email, nil, &e.alice)
	wantAPIError(t, r, 405, "", "Method Not Allowed")
	if r.header.Get("Allow") != "GET" {
		t.Errorf("Allow by address: got %q, want GET", r.header.Get("Allow"))
	}
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/users/"+id(e.alice), nil, nil), 401, "UNAUTHORIZED", "Not logged in: API authentication or user session required")
}

func TestDeactivateOwnUser_EndsTheAccountAndItsQueues(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.alice, nil).str("queue_id")
	bobQueue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	wantAPISuccess(t, e.request(t, "DELETE", "/api/v1/users/me", nil, &e.alice))
	if u, err := e.st.userByID(e.alice.ID); err != nil || u.Active {
		t.Errorf("alice after DELETE users/me: got active %v (%v), want deactivated", u.Active, err)
	}
	wantAPIError(t, e.request(t, "GET", "/api/v1/users/me", nil, &e.alice), 401, "UNAUTHORIZED", "Account is deactivated")
	e.server.events.mu.Lock()
	_, queued := e.server.events.queues[queue]
	e.server.events.mu.Unlock()
	if queued {
		t.Errorf("alice's queue outlived her account")
	}
	// Nobody else's account or queue is touched.
	wantAPISuccess(t, e.request(t, "GET", "/api/v1/users/me", nil, &e.bob))
	wantAPISuccess(t, e.request(t, "GET", "/api/v1/events", url.Values{"queue_id": {bobQueue}, "last_event_id": {"-1"}, "dont_block": {"true"}}, &e.bob))
}

func TestDeactivateOwnUser_RefusesTheOnlyOwnerAndTheOnlyUser(t *testing.T) {
	e := newTestEnv(t)
	r := e.request(t, "DELETE", "/api/v1/users/me", nil, &e.owner)
	wantAPIError(t, r, 400, "CANNOT_DEACTIVATE_LAST_USER", "Cannot deactivate the only organization owner.")
	if r.body["is_last_owner"] != true || r.body["entity"] != "organization owner" {
		t.Errorf("the only owner: got %s, want is_last_owner true and entity", r.raw)
	}
	wantAPISuccess(t, e.request(t, "GET", "/api/v1/users/me", nil, &e.owner)) // still active
	// Everyone else gone, alice is the only user.
	for _, a := range []account{e.owner, e.admin, e.bob, e.bot} {
		if err := e.st.setActive(a.Email, false); err != nil {
			t.Fatal(err)
		}
	}
	r = e.request(t, "DELETE", "/api/v1/users/me", nil, &e.alice)
	wantAPIError(t, r, 400, "CANNOT_DEACTIVATE_LAST_USER", "Cannot deactivate the only user.")
	if r.body["is_last_owner"] != false || r.body["entity"] != "user" {
		t.Errorf("the only user: got %s, want is_last_owner false", r.raw)
	}
	wantAPISuccess(t, e.request(t, "GET", "/api/v1/users/me", nil, &e.alice))
}
