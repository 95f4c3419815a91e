package main

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

func TestStatus_SetSeenByEveryoneAndInRegister(t *testing.T) {
	e := newTestEnv(t)
	bobQueue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["user_status"]`}}).str("queue_id")
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/status", url.Values{
		"status_text": {"  on vacation  "}, "emoji_name": {"car"}, "emoji_code": {"1f697"}, "reaction_type": {"unicode_emoji"}}, &e.alice))
	got := e.pollNow(t, &e.bob, bobQueue, -1)
	want := map[string]any{"type": "user_status", "user_id": float64(e.alice.ID), "status_text": "on vacation", "emoji_name": "car", "emoji_code": "1f697", "reaction_type": "unicode_emoji", "id": float64(0)}
	if len(got) != 1 || !jsonEqual(got[0], want) {
		t.Errorf("bob's queue: got %v, want %v", got, want)
	}
	// Only what the request set is told.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/status", url.Values{"status_text": {""}}, &e.alice))
	got = e.pollNow(t, &e.bob, bobQueue, 0)
	if len(got) != 1 || got[0]["status_text"] != "" || got[0]["emoji_name"] != nil {
		t.Errorf("clearing the text: got %v, want status_text \"\" and no emoji fields", got)
	}
	r := e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["user_status"]`}})
	status := object(object(r.body["user_status"])[idKey(e.alice)])
	if !jsonEqual(status, map[string]any{"emoji_name": "car", "emoji_code": "1f697", "reaction_type": "unicode_emoji"}) {
		t.Errorf("register's user_status for alice: got %v", status)
	}
	r = e.request(t, http.MethodGet, "/api/v1/users/"+idKey(e.alice)+"/status", nil, &e.bob)
	wantAPISuccess(t, r)
	if !jsonEqual(r.body["status"], status) {
		t.Errorf("GET status: got %v, want %v", r.body["status"], status)
	}
	// away is presence_enabled off, told as a settings change too.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/status", url.Values{"away": {"true"}, "emoji_name": {""}}, &e.alice))
	if on, _ := e.st.presenceEnabled(e.alice.ID); on {
		t.Errorf("away true left presence_enabled on")
	}
	r = e.request(t, http.MethodGet, "/api/v1/users/"+idKey(e.alice)+"/status", nil, &e.bob)
	if !jsonEqual(r.body["status"], map[string]any{"away": true}) {
		t.Errorf("after away and clearing the emoji: got %v, want {away: true}", r.body["status"])
	}
	// Someone with nothing set is not listed.
	r = e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {`["user_status"]`}})
	if _, ok := object(r.body["user_status"])[idKey(e.bob)]; ok {
		t.Errorf("bob set nothing, but register lists him: %v", r.body["user_status"])
	}
	// A name alone is looked up in the emoji table, as Zulip's get_emoji_data.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/status", url.Values{"emoji_name": {"car"}}, &e.bob))
	if st, _ := e.st.statusOf(e.bob.ID); st.EmojiCode != "1f697" || st.ReactionType != "unicode_emoji" {
		t.Errorf("bob's status after naming car alone: %+v", st)
	}
	// One's own status is one's own: bob's request never changes alice's.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/status", url.Values{"status_text": {"bob's"}}, &e.bob))
	if st, _ := e.st.statusOf(e.alice.ID); st.StatusText != "" || !st.Away {
		t.Errorf("alice's status after bob's change: %+v", st)
	}
}

func TestStatus_Refusals(t *testing.T) {
	e := newTestEnv(t)
	gone, _ := mustCreateUser(t, e.st, "gone@example.com", roleMember, false)
	e.st.setActive(gone.Email, false)
	for _, c := range []struct {
		rule   string
		params url.Values
		who    *account
		msg    string
	}{
		{"something must change", nil, &e.alice, "Client did not pass any new values."},
		{"away is a boolean", url.Values{"away": {"yes"}}, &e.alice, "away is not valid JSON"},
		{"a text of at most 60 characters", url.Values{"status_text": {strings.Repeat("é", 61)}}, &e.alice, "status_text is too long (limit: 60 characters)"},
		{"a code needs a name", url.Values{"status_text": {"x"}, "emoji_code": {"1f697"}}, &e.alice, "Client must pass emoji_name if they pass either emoji_code or reaction_type."},
		{"a name alone must be known", url.Values{"emoji_name": {"no_such_emoji"}}, &e.alice, "Emoji 'no_such_emoji' does not exist"},
		{"no custom emoji", url.Values{"emoji_name": {"party"}, "emoji_code": {"1"}, "reaction_type": {"realm_emoji"}}, &e.alice, "Invalid custom emoji."},
		{"a unicode code is hex", url.Values{"emoji_name": {"car"}, "emoji_code": {"car"}, "reaction_type": {"unicode_emoji"}}, &e.alice, "Invalid emoji code."},
		{"zulip's own emoji", url.Values{"emoji_name": {"zulip"}, "emoji_code": {"other"}, "reaction_type": {"zulip_extra_emoji"}}, &e.alice, "Invalid emoji code."},
		{"a known type", url.Values{"emoji_name": {"car"}, "emoji_code": {"1f697"}, "reaction_type": {"sticker"}}, &e.alice, "Invalid emoji type."},
		{"bots have no status", url.Values{"status_text": {"x"}}, &e.bot, "This endpoint does not accept bot requests."},
	} {
		t.Run(c.rule, func(t *testing.T) {
			wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/users/me/status", c.params, c.who), http.StatusBadRequest, "BAD_REQUEST", c.msg)
			if st, _ := e.st.statusOf(e.alice.ID); st != (statusObject{}) {
				t.Errorf("a refused change left %+v", st)
			}
		})
	}
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/status", url.Values{"emoji_name": {"zulip"}}, &e.alice))
	for _, c := range []struct {
		path, msg string
	}{
		{"/api/v1/users/999/status", "No such user"},
		{"/api/v1/users/" + idKey(e.bot) + "/status", "No such user"},
		{"/api/v1/users/" + strconv.FormatUint(gone.ID, 10) + "/status", "User is deactivated"},
	} {
		wantAPIError(t, e.request(t, http.MethodGet, c.path, nil, &e.bob), http.StatusBadRequest, "BAD_REQUEST", c.msg)
	}
}
