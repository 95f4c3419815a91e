package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// settingsOf is the user_settings register answers the account now.
func (e *testEnv) settingsOf(t *testing.T, a *account) map[string]any {
	t.Helper()
	r := e.registerQueue(t, a, url.Values{"fetch_event_types": {`["user_settings"]`}, "event_types": {`["heartbeat"]`}})
	return object(r.body["user_settings"])
}

// TestUpdateSettings_ChangesWhatTheAppAndTerminalUse changes the settings
// zulip-flutter's updateSettings sends (lib/api/route/settings.dart) and
// those zulip-terminal reads, and checks the answer, the state after and
// the events: a user_settings event to every queue of the user, the
// legacy event only to queues without the user_settings_object
// capability, nothing to others and nothing for an unchanged value.
func TestUpdateSettings_ChangesWhatTheAppAndTerminalUse(t *testing.T) {
	e := newTestEnv(t)
	modern := e.registerQueue(t, &e.alice, url.Values{"client_capabilities": {`{"notification_settings_null":true,"user_settings_object":true}`}}).str("queue_id")
	legacy := e.registerQueue(t, &e.alice, nil).str("queue_id")
	bobs := e.registerQueue(t, &e.bob, nil).str("queue_id")

	r := e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{
		"twenty_four_hour_time": {"true"}, "starred_message_counts": {"false"}, "display_emoji_reaction_users": {"false"},
		"emojiset": {"text"}, "presence_enabled": {"false"}, "pm_content_in_desktop_notifications": {"false"},
		"send_private_typing_notifications": {"true"}, // already true: no event
	}, &e.alice)
	wantAPISuccess(t, r)
	if _, ok := r.body["ignored_parameters_unsupported"]; ok {
		t.Errorf("settings the app changes were ignored: %v", r.body["ignored_parameters_unsupported"])
	}
	settings := e.settingsOf(t, &e.alice)
	for name, want := range map[string]any{"twenty_four_hour_time": true, "starred_message_counts": false, "display_emoji_reaction_users": false,
		"emojiset": "text", "presence_enabled": false, "pm_content_in_desktop_notifications": false, "send_private_typing_notifications": true} {
		if settings[name] != want {
			t.Errorf("after PATCH: %s is %v, want %v", name, settings[name], want)
		}
	}
	if got := e.settingsOf(t, &e.bob)["emojiset"]; got != "google" {
		t.Errorf("bob's emojiset changed to %v", got)
	}

	changed := []string{"display_emoji_reaction_users", "emojiset", "pm_content_in_desktop_notifications", "presence_enabled", "starred_message_counts", "twenty_four_hour_time"}
	var updates []string
	for _, ev := range e.pollNow(t, &e.alice, modern, -1) {
		if ev["type"] != "user_settings" || ev["op"] != "update" {
			t.Errorf("modern queue got %v", ev)
			continue
		}
		updates = append(updates, ev["property"].(string))
		if ev["property"] == "emojiset" && ev["value"] != "text" || ev["property"] == "twenty_four_hour_time" && ev["value"] != true {
			t.Errorf("event %v has the wrong value", ev)
		}
	}
	if !jsonEqual(updates, changed) {
		t.Errorf("user_settings events: got %v, want %v (in Zulip's order, changed ones only)", updates, changed)
	}
	var legacyTypes []string
	for _, ev := range e.pollNow(t, &e.alice, legacy, -1) {
		legacyTypes = append(legacyTypes, ev["type"].(string)+":"+firstString(ev["property"], ev["setting_name"], ev["notification_name"]))
		if ev["type"] == "update_display_settings" && ev["user"] != e.alice.Email {
			t.Errorf("legacy event %v lacks the user", ev)
		}
	}
	want := []string{
		"user_settings:display_emoji_reaction_users",
		"user_settings:emojiset", "update_display_settings:emojiset",
		"user_settings:pm_content_in_desktop_notifications", "update_global_notifications:pm_content_in_desktop_notifications",
		"user_settings:presence_enabled", "update_global_notifications:presence_enabled",
		"user_settings:starred_message_counts", "update_display_settings:starred_message_counts",
		"user_settings:twenty_four_hour_time", "update_display_settings:twenty_four_hour_time",
	}
	if !jsonEqual(legacyTypes, want) {
		t.Errorf("legacy queue events:\n got %v\nwant %v", legacyTypes, want)
	}
	if evs := e.pollNow(t, &e.bob, bobs, -1); len(evs) != 0 {
		t.Errorf("bob's queue heard alice's settings: %v", evs)
	}

	// The same values again change nothing and tell nothing.
	r = e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"emojiset": {"text"}}, &e.alice)
	wantAPISuccess(t, r)
	if evs := e.pollNow(t, &e.alice, modern, 5); len(evs) != 0 {
		t.Errorf("an unchanged setting sent %v", evs)
	}
	// Back to the default: stored as nothing.
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"emojiset": {"google"}}, &e.alice))
	if overrides, _ := e.st.userSettings(e.alice.ID); overrides["emojiset"] != nil {
		t.Errorf("a default value is stored: %s", overrides["emojiset"])
	}
}

// TestUpdateSettings_RefusalsChangeNothing checks Zulip's errors for bad
// values (zerver/lib/typed_endpoint.py's texts) and that a refused request
// changes no setting, even its valid ones.
func TestUpdateSettings_RefusalsChangeNothing(t *testing.T) {
	e := newTestEnv(t)
	for _, c := range []struct {
		rule   string
		params url.Values
		msg    string
	}{
		{"a boolean is JSON", url.Values{"twenty_four_hour_time": {"yes"}}, "twenty_four_hour_time is not valid JSON"},
		{"a boolean is a boolean", url.Values{"starred_message_counts": {"1"}}, "starred_message_counts is not a boolean"},
		{"an emoji set is one of Zulip's", url.Values{"emojiset": {"apple"}}, "Invalid emojiset: Value error, Not in the list of possible values"},
		{"an integer setting takes its values", url.Values{"color_scheme": {"7"}}, "Invalid color_scheme: Value error, Not in the list of possible values"},
		{"an integer setting takes integers", url.Values{"color_scheme": {"2.0"}}, "color_scheme is not an integer"},
		{"a bad value refuses the valid ones too", url.Values{"emojiset": {"text"}, "web_home_view": {"home"}}, "Invalid web_home_view: Value error, Not in the list of possible values"},
	} {
		r := e.request(t, http.MethodPatch, "/api/v1/settings", c.params, &e.alice)
		wantAPIError(t, r, 400, "BAD_REQUEST", c.msg)
		if overrides, _ := e.st.userSettings(e.alice.ID); len(overrides) != 0 {
			t.Errorf("%s: the refusal stored %v", c.rule, overrides)
		}
	}
	r := e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"emojiset": {"text"}}, &e.bot)
	wantAPIError(t, r, 400, "BAD_REQUEST", "This endpoint does not accept bot requests.")

	// Settings for server features zulite lacks are not taken.
	r = e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"enable_digest_emails": {"false"}, "email": {"alice@example.org"}, "enter_sends": {"true"}}, &e.alice)
	wantAPISuccess(t, r)
	if !jsonEqual(r.body["ignored_parameters_unsupported"], []string{"email", "enable_digest_emails"}) {
		t.Errorf("ignored_parameters_unsupported: got %v", r.body["ignored_parameters_unsupported"])
	}
	settings := e.settingsOf(t, &e.alice)
	if settings["enable_digest_emails"] != true || settings["enter_sends"] != true {
		t.Errorf("after PATCH: enable_digest_emails %v (want the default, true), enter_sends %v (want true)", settings["enable_digest_emails"], settings["enter_sends"])
	}
}

func firstString(vs ...any) string {
	for _, v := range vs {
		if s, ok := v.(string); ok {
			return s
		}
	}
	return ""
}

// TestUpdateSettings_NameAndPassword changes one's own name and password
// as Zulip's json_change_settings does: the old password must log in, the
// new one be long enough, the name pass check_full_name; a refusal
// changes nothing, and a new password ends the account's web sessions.
func TestUpdateSettings_NameAndPassword(t *testing.T) {
	e := loginEnv(t)
	names := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["realm_user"]`}}).str("queue_id")
	for _, c := range []struct {
		rule   string
		params url.Values
		msg    string
	}{
		{"the old password must be right", url.Values{"old_password": {"guess"}, "new_password": {"long-new-password"}}, "Wrong password!"},
		{"the old password must be given", url.Values{"new_password": {"long-new-password"}}, "Wrong password!"},
		{"the new password must be long enough", url.Values{"old_password": {"alice-password"}, "new_password": {"abc"}}, "New password is too weak!"},
		{"a bad name refuses the password too", url.Values{"old_password": {"alice-password"}, "new_password": {"long-new-password"}, "full_name": {"  "}}, "Name too short!"},
		{"a name has no mention syntax", url.Values{"full_name": {"Alice @ work"}}, "Invalid characters in name!"},
		{"a name is at most 100 characters", url.Values{"full_name": {strings.Repeat("a", 101)}}, "Name too long!"},
		{"a bad setting refuses the name too", url.Values{"full_name": {"Alicia"}, "emojiset": {"apple"}}, "Invalid emojiset: Value error, Not in the list of possible values"},
	} {
		r := e.request(t, http.MethodPatch, "/api/v1/settings", c.params, &e.alice)
		wantAPIError(t, r, 400, "BAD_REQUEST", c.msg)
		if r, _ := e.webLogin(t, "alice@example.com", "alice-password"); r.status != 200 {
			t.Errorf("%s: the refusal changed the password (login: %s)", c.rule, r.raw)
		}
		if u, _ := e.st.userByID(e.alice.ID); u.FullName != e.alice.FullName {
			t.Errorf("%s: the refusal renamed alice to %q", c.rule, u.FullName)
		}
	}

	r := e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"full_name": {"  Alicia Smith "}}, &e.alice)
	wantAPISuccess(t, r)
	if u, _ := e.st.userByID(e.alice.ID); u.FullName != "Alicia Smith" {
		t.Errorf("after the rename: full_name %q, want the name stripped", u.FullName)
	}
	var renamed bool
	for _, ev := range e.pollNow(t, &e.bob, names, -1) {
		person := object(ev["person"])
		renamed = renamed || ev["op"] == "update" && person["full_name"] == "Alicia Smith"
	}
	if !renamed {
		t.Error("bob heard no realm_user update of alice's name")
	}

	_, cookie := e.webLogin(t, "alice@example.com", "alice-password")
	r = e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"old_password": {"alice-password"}, "new_password": {"alice-new-password"}}, &e.alice)
	wantAPISuccess(t, r)
	if r, _ := e.webLogin(t, "alice@example.com", "alice-password"); r.status == 200 {
		t.Error("the old password still logs in")
	}
	if r, _ := e.webLogin(t, "alice@example.com", "alice-new-password"); r.status != 200 {
		t.Errorf("the new password does not log in: %s", r.raw)
	}
	if _, _, err := e.st.sessionUser(cookie.Value, time.Now()); err == nil {
		t.Error("alice's web session outlived her new password")
	}
}
