package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// userPath is /api/v1/users/{id}.
func userPath(a account) string { return "/api/v1/users/" + strconv.FormatUint(a.ID, 10) }

// userObjectOf is GET /users/{id} of a, with its profile data, as the
// owner sees it.
func (e *testEnv) userObjectOf(t *testing.T, a account) map[string]any {
	t.Helper()
	r := e.request(t, http.MethodGet, userPath(a), url.Values{"include_custom_profile_fields": {"true"}}, &e.owner)
	wantAPISuccess(t, r)
	u, _ := r.body["user"].(map[string]any)
	return u
}

// personUpdates are the realm_user update events' person objects in a
// queue, and the user_group events as "op group".
func (e *testEnv) personUpdates(t *testing.T, a *account, queue string) (people []string, groups []string) {
	t.Helper()
	for _, ev := range e.pollNow(t, a, queue, -1) {
		switch ev["type"] {
		case "realm_user":
			if ev["op"] == "update" {
				b, _ := json.Marshal(ev["person"])
				people = append(people, string(b))
			}
		case "user_group":
			groups = append(groups, fmt.Sprint(ev["op"], " ", ev["group_id"], " ", ev["user_ids"]))
		}
	}
	return people, groups
}

func TestUpdateUser_RoleAndNameFollowZulipsRules(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	alice := userPath(e.alice)
	for _, c := range []struct {
		rule   string
		as     *account
		path   string
		params url.Values
		code   string
		msg    string
	}{
		{"a member administers nobody", &e.bob, alice, url.Values{"full_name": {"Bobbed"}}, "BAD_REQUEST", "Insufficient permission"},
		{"a member changes no role", &e.bob, alice, url.Values{"role": {"200"}}, "BAD_REQUEST", "Insufficient permission"},
		{"an unknown id", &e.admin, "/api/v1/users/999999", url.Values{"full_name": {"X"}}, "BAD_REQUEST", "No such user"},
		{"a role Zulip does not have", &e.admin, alice, url.Values{"role": {"150"}}, "BAD_REQUEST", "Invalid role: Value error, Not in the list of possible values"},
		{"a role that is not an integer", &e.admin, alice, url.Values{"role": {`"200"`}}, "BAD_REQUEST", "role is not an integer"},
		{"only owners make owners", &e.admin, alice, url.Values{"role": {"100"}}, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner"},
		{"only owners unmake owners", &e.admin, userPath(e.owner), url.Values{"role": {"200"}}, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner"},
		{"the last owner stays one", &e.owner, userPath(e.owner), url.Values{"role": {"400"}}, "BAD_REQUEST", "The owner permission cannot be removed from the only organization owner."},
		{"a name too long", &e.admin, alice, url.Values{"full_name": {strings.Repeat("a", 101)}}, "BAD_REQUEST", "Name too long!"},
		{"a name with mention syntax", &e.admin, alice, url.Values{"full_name": {"a*b"}}, "BAD_REQUEST", "Invalid characters in name!"},
		{"a name of nothing visible", &e.admin, alice, url.Values{"full_name": {"\u200b"}}, "BAD_REQUEST", "Name too short!"},
		{"a good role with a bad name changes neither", &e.admin, alice, url.Values{"role": {"600"}, "full_name": {"x|12"}}, "BAD_REQUEST", "Invalid format!"},
	} {
		r := e.request(t, http.MethodPatch, c.path, c.params, c.as)
		wantAPIError(t, r, http.StatusBadRequest, c.code, c.msg)
	}
	if u := e.userObjectOf(t, e.alice); u["role"] != float64(roleMember) || u["full_name"] != e.alice.FullName {
		t.Fatalf("after refusals alice is %v, want unchanged", u)
	}
	if people, groups := e.personUpdates(t, &e.bob, queue); people != nil || groups != nil {
		t.Fatalf("refusals sent events: %v %v", people, groups)
	}

	wantAPISuccess(t, e.request(t, http.MethodPatch, alice, url.Values{"role": {"200"}, "full_name": {"  Alice Admin  "}}, &e.admin))
	u := e.userObjectOf(t, e.alice)
	if u["role"] != float64(roleAdmin) || u["is_admin"] != true || u["full_name"] != "Alice Admin" {
		t.Errorf("after the change alice is %v, want an administrator named Alice Admin", u)
	}
	// Her new role takes effect at once: she administers now.
	wantAPISuccess(t, e.request(t, http.MethodPatch, userPath(e.bob), url.Values{"full_name": {"Robert"}}, &e.alice))
	// A blank name and the same role change nothing and say nothing.
	wantAPISuccess(t, e.request(t, http.MethodPatch, alice, url.Values{"full_name": {"   "}, "role": {"200"}}, &e.admin))
	// An owner makes another owner, who may then be demoted.
	wantAPISuccess(t, e.request(t, http.MethodPatch, userPath(e.admin), url.Values{"role": {"100"}}, &e.owner))
	wantAPISuccess(t, e.request(t, http.MethodPatch, userPath(e.owner), url.Values{"role": {"400"}}, &e.admin))

	people, groups := e.personUpdates(t, &e.bob, queue)
	aliceID, bobID, adminID, ownerID := e.alice.ID, e.bob.ID, e.admin.ID, e.owner.ID
	want := []string{
		fmt.Sprintf(`{"role":200,"user_id":%d}`, aliceID), fmt.Sprintf(`{"full_name":"Alice Admin","user_id":%d}`, aliceID),
		fmt.Sprintf(`{"full_name":"Robert","user_id":%d}`, bobID),
		fmt.Sprintf(`{"role":100,"user_id":%d}`, adminID), fmt.Sprintf(`{"role":400,"user_id":%d}`, ownerID),
	}
	if fmt.Sprint(people) != fmt.Sprint(want) {
		t.Errorf("realm_user updates: got %v, want %v", people, want)
	}
	wantGroups := []string{
		fmt.Sprintf("remove_members 5 [%d]", aliceID), fmt.Sprintf("add_members 2 [%d]", aliceID), fmt.Sprintf("remove_members 4 [%d]", aliceID),
		fmt.Sprintf("remove_members 2 [%d]", adminID), fmt.Sprintf("add_members 1 [%d]", adminID),
		fmt.Sprintf("remove_members 1 [%d]", ownerID), fmt.Sprintf("add_members 5 [%d]", ownerID), fmt.Sprintf("add_members 4 [%d]", ownerID),
	}
	if fmt.Sprint(groups) != fmt.Sprint(wantGroups) {
		t.Errorf("user_group events: got %v, want %v", groups, wantGroups)
	}
	// register's groups agree with the events.
	state := e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["realm_user_groups"]`}})
	for _, g := range state.body["realm_user_groups"].([]any) {
		g := g.(map[string]any)
		if g["name"] == "role:owners" && fmt.Sprint(g["members"]) != fmt.Sprintf("[%d]", adminID) {
			t.Errorf("role:owners members: got %v, want [%d]", g["members"], adminID)
		}
	}
}

func TestUserByID_MethodsAndAddresses(t *testing.T) {
	e := newTestEnv(t)
	r := e.request(t, http.MethodPut, userPath(e.alice), nil, &e.admin)
	if r.status != http.StatusMethodNotAllowed || fmt.Sprint(r.body["allowed_methods"]) != "[DELETE GET PATCH]" {
		t.Errorf("PUT /users/{id}: got %d %s, want 405 allowing DELETE, GET, PATCH", r.status, r.raw)
	}
	r = e.request(t, http.MethodPatch, "/api/v1/users/"+e.alice.Email, url.Values{"full_name": {"X"}}, &e.admin)
	if r.status != http.StatusMethodNotAllowed || fmt.Sprint(r.body["allowed_methods"]) != "[GET]" {
		t.Errorf("PATCH /users/{email}: got %d %s, want 405 allowing GET", r.status, r.raw)
	}
}

func TestDeactivateAndReactivate_ByAnAdministrator(t *testing.T) {
	e := newTestEnv(t)
	bobQueue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	aliceQueue := e.registerQueue(t, &e.alice, nil).str("queue_id")
	alice := userPath(e.alice)
	for _, c := range []struct {
		rule   string
		as     *account
		method string
		path   string
		params url.Values
		code   string
		msg    string
	}{
		{"a member deactivates nobody", &e.bob, "DELETE", alice, nil, "BAD_REQUEST", "Insufficient permission"},
		{"an unknown id", &e.admin, "DELETE", "/api/v1/users/999999", nil, "BAD_REQUEST", "No such user"},
		{"a bot is not a user here", &e.admin, "DELETE", userPath(e.bot), nil, "BAD_REQUEST", "No such user"},
		{"only owners deactivate owners", &e.admin, "DELETE", userPath(e.owner), nil, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner"},
		{"not the last owner", &e.owner, "DELETE", userPath(e.owner), nil, "BAD_REQUEST", "Cannot deactivate the only organization owner"},
		{"a comment over 2000 characters", &e.admin, "DELETE", alice, url.Values{"deactivation_notification_comment": {strings.Repeat("x", 2001)}}, "BAD_REQUEST",
			"deactivation_notification_comment is too long (limit: 2000 characters)"},
		{"a member reactivates nobody", &e.bob, "POST", alice + "/reactivate", nil, "BAD_REQUEST", "Insufficient permission"},
		{"reactivating an unknown id", &e.admin, "POST", "/api/v1/users/999999/reactivate", nil, "BAD_REQUEST", "No such user"},
	} {
		r := e.request(t, c.method, c.path, c.params, c.as)
		wantAPIError(t, r, http.StatusBadRequest, c.code, c.msg)
	}
	if u := e.userObjectOf(t, e.alice); u["is_active"] != true {
		t.Fatalf("after refusals alice is %v, want active", u)
	}
	wantAPISuccess(t, e.request(t, http.MethodGet, "/api/v1/users/me", nil, &e.alice))

	wantAPISuccess(t, e.request(t, http.MethodDelete, alice, url.Values{"deactivation_notification_comment": {"Bye"}}, &e.admin))
	if u := e.userObjectOf(t, e.alice); u["is_active"] != false {
		t.Errorf("alice after deactivation: %v, want is_active false", u)
	}
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/users/me", nil, &e.alice), http.StatusUnauthorized, "UNAUTHORIZED", "Account is deactivated")
	e.server.events.mu.Lock()
	_, queued := e.server.events.queues[aliceQueue]
	e.server.events.mu.Unlock()
	if queued {
		t.Errorf("alice's event queue outlived her deactivation")
	}
	wantAPIError(t, e.request(t, http.MethodDelete, alice, nil, &e.admin), http.StatusBadRequest, "BAD_REQUEST", "User is deactivated")

	wantAPISuccess(t, e.request(t, http.MethodPost, alice+"/reactivate", nil, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodGet, "/api/v1/users/me", nil, &e.alice))
	people, groups := e.personUpdates(t, &e.bob, bobQueue)
	id := e.alice.ID
	if want := []string{fmt.Sprintf(`{"is_active":false,"user_id":%d}`, id), fmt.Sprintf(`{"is_active":true,"user_id":%d}`, id)}; fmt.Sprint(people) != fmt.Sprint(want) {
		t.Errorf("realm_user updates: got %v, want %v", people, want)
	}
	if want := []string{fmt.Sprintf("add_members 4 [%d]", id), fmt.Sprintf("add_members 5 [%d]", id)}; fmt.Sprint(groups) != fmt.Sprint(want) {
		t.Errorf("user_group events: got %v, want %v", groups, want)
	}
	// Her channels' subscribers hold her again, for those who see them
	// (bob sees general's, not the private channel's).
	var peers []string
	for _, ev := range e.eventsOfType(t, &e.bob, bobQueue, "subscription") {
		peers = append(peers, fmt.Sprint(ev["op"], " ", ev["stream_ids"], " ", ev["user_ids"]))
	}
	if want := []string{fmt.Sprintf("peer_add [%d] [%d]", e.general.ID, id)}; fmt.Sprint(peers) != fmt.Sprint(want) {
		t.Errorf("subscription events: got %v, want %v", peers, want)
	}

	// A bot comes back only for whoever may create bots: nobody in zulite.
	if err := e.st.setActive(e.bot.Email, false); err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, e.request(t, http.MethodPost, userPath(e.bot)+"/reactivate", nil, &e.owner), http.StatusBadRequest, "BAD_REQUEST", "Insufficient permission")
	if u := e.userObjectOf(t, e.bot); u["is_active"] != false {
		t.Errorf("the bot after a refused reactivation: %v", u)
	}
}

func TestRealmUserSettingsDefaults_NewUsersStartWithThem(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	defaults := func() map[string]any {
		r := e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["realm_user_settings_defaults"]`}})
		d, _ := r.body["realm_user_settings_defaults"].(map[string]any)
		return d
	}
	path := "/api/v1/realm/user_settings_defaults"
	wantAPIError(t, e.request(t, http.MethodPatch, path, url.Values{"enter_sends": {"true"}}, &e.bob), http.StatusBadRequest, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator")
	wantAPIError(t, e.request(t, http.MethodPatch, path, url.Values{"enter_sends": {"true"}, "color_scheme": {"9"}}, &e.admin), http.StatusBadRequest, "BAD_REQUEST",
		"Invalid color_scheme: Value error, Not in the list of possible values")
	wantAPIError(t, e.request(t, http.MethodPatch, path, url.Values{"enter_sends": {"yes"}}, &e.admin), http.StatusBadRequest, "BAD_REQUEST", "enter_sends is not valid JSON")
	if d := defaults(); d["enter_sends"] != false || d["emojiset"] != "google" {
		t.Fatalf("after refusals the defaults are %v", d)
	}

	r := e.request(t, http.MethodPatch, path, url.Values{"enter_sends": {"true"}, "emojiset": {"text"}, "emojiset_choices": {"x"}}, &e.admin)
	wantAPISuccess(t, r)
	if fmt.Sprint(r.body["ignored_parameters_unsupported"]) != "[emojiset_choices]" {
		t.Errorf("ignored parameters: got %v", r.body["ignored_parameters_unsupported"])
	}
	if d := defaults(); d["enter_sends"] != true || d["emojiset"] != "text" || d["emojiset_choices"] == nil {
		t.Errorf("register's defaults: got %v", d)
	}
	var changes []string
	for _, ev := range e.eventsOfType(t, &e.bob, queue, "realm_user_settings_defaults") {
		changes = append(changes, fmt.Sprint(ev["op"], " ", ev["property"], "=", ev["value"]))
	}
	if want := "[update emojiset=text update enter_sends=true]"; fmt.Sprint(changes) != want {
		t.Errorf("events: got %v, want %s", changes, want)
	}
	// Those already here keep theirs; a new account starts with the defaults.
	if s := e.settingsOf(t, &e.bob); s["enter_sends"] != false {
		t.Errorf("bob's enter_sends changed: %v", s["enter_sends"])
	}
	created := e.request(t, http.MethodPost, "/api/v1/users", url.Values{"email": {"new@example.com"}, "password": {"new-password-1"}, "full_name": {"New"}}, &e.admin)
	wantAPISuccess(t, created)
	u, err := e.st.userByEmail("new@example.com")
	if err != nil {
		t.Fatal(err)
	}
	overrides, err := e.st.userSettings(u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(overrides["enter_sends"]) != "true" || string(overrides["emojiset"]) != `"text"` {
		t.Errorf("the new account's settings: got %v, want the defaults", overrides)
	}
}

func TestUpdateUser_ARoleTellsThePrivateChannelsItShowsOrHides(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	others := e.registerQueue(t, &e.alice, nil).str("queue_id")
	wantAPISuccess(t, e.request(t, http.MethodPatch, userPath(e.bob), url.Values{"role": {"200"}}, &e.owner))
	wantAPISuccess(t, e.request(t, http.MethodPatch, userPath(e.bob), url.Values{"role": {"400"}}, &e.owner))
	var got []string
	for _, ev := range e.pollNow(t, &e.bob, queue, -1) {
		switch ev["type"] {
		case "stream":
			var ids []any
			for _, s := range ev["streams"].([]any) {
				ids = append(ids, s.(map[string]any)["stream_id"])
			}
			got = append(got, fmt.Sprint("stream ", ev["op"], " ", ids))
		case "subscription":
			got = append(got, fmt.Sprint(ev["op"], " ", ev["stream_ids"], " ", ev["user_ids"]))
		}
	}
	secret, alice := e.secret.ID, e.alice.ID
	want := []string{fmt.Sprintf("stream create [%d]", secret), fmt.Sprintf("peer_add [%d] [%d]", secret, alice), fmt.Sprintf("stream delete [%d]", secret)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bob's channel events: got %v, want %v", got, want)
	}
	if evs := e.eventsOfType(t, &e.alice, others, "stream"); len(evs) != 0 {
		t.Errorf("alice heard of bob's view: %v", evs)
	}
}
