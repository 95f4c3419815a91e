package main

import (
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestSubscriptions_SubscribeListUnsubscribe(t *testing.T) {
	e := newTestEnv(t)
	r := e.requestAs(t, multipartForm, http.MethodPost, "/api/v1/users/me/subscriptions",
		url.Values{"subscriptions": {`[{"name":"general"},{"name":"new one","description":"fresh"}]`}}, &e.alice)
	wantAPISuccess(t, r)
	aliceKey, bobKey := strconv.FormatUint(e.alice.ID, 10), strconv.FormatUint(e.bob.ID, 10) // keyed by user id since feature level 289
	if got, want := r.body["subscribed"], map[string]any{aliceKey: []any{"new one"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("subscribed: got %v, want %v", got, want)
	}
	if got, want := r.body["already_subscribed"], map[string]any{aliceKey: []any{"general"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("already_subscribed: got %v, want %v", got, want)
	}
	r = e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"dup"},{"name":" DUP "}]`}, "invite_only": {"true"}}, &e.bob)
	if got, want := r.body["subscribed"], map[string]any{bobKey: []any{"dup"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("a name given twice: subscribed got %v, want %v", got, want)
	}
	if got := channelNamed(t, e, "dup"); !got.Private || got.CreatorID != e.bob.ID {
		t.Errorf("created channel: got %+v, want private, created by bob", got)
	}

	r = e.request(t, http.MethodGet, "/api/v1/users/me/subscriptions", url.Values{"include_subscribers": {"true"}}, &e.alice)
	wantAPISuccess(t, r)
	subs, _ := r.body["subscriptions"].([]any)
	var names []string
	for _, s := range subs {
		sub := s.(map[string]any)
		names = append(names, sub["name"].(string))
		for _, f := range []string{"stream_id", "description", "rendered_description", "invite_only", "color", "is_muted", "in_home_view", "pin_to_top", "subscribers", "date_created", "stream_post_policy", "history_public_to_subscribers"} {
			if _, ok := sub[f]; !ok {
				t.Errorf("subscription %s lacks %s", sub["name"], f)
			}
		}
	}
	if want := []string{"general", "new one", "secret"}; !slices.Equal(names, want) {
		t.Errorf("subscriptions: got %v, want %v", names, want)
	}
	for _, s := range subs {
		sub := s.(map[string]any)
		want := channelNamed(t, e, sub["name"].(string))
		if sub["stream_id"] != float64(want.ID) || sub["invite_only"] != want.Private || sub["description"] != want.Description ||
			!slices.Contains(sub["subscribers"].([]any), any(float64(e.alice.ID))) {
			t.Errorf("subscription %s: got %v, want stream_id %d, invite_only %v, description %q, alice among subscribers",
				sub["name"], sub, want.ID, want.Private, want.Description)
		}
	}
	if nc := channelNamed(t, e, "new one"); nc.Description != "fresh" {
		t.Errorf("new one's description: got %q, want fresh", nc.Description)
	}

	// A refused request changes nothing (SPEC §3), even when a channel
	// before the bad one in the list would have been created.
	before, err := e.st.channels()
	if err != nil {
		t.Fatal(err)
	}
	r = e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"brand new"},{"name":"secret"}]`}}, &e.bob)
	wantAPIError(t, r, 400, "BAD_REQUEST", "Unable to access channel (secret).")
	for _, c := range []struct{ subs, msg string }{
		{`[{"name":"brand new"},{"name":""}]`, "Channel name can't be empty."},
		{`[{"name":"brand new"},{"name":"` + strings.Repeat("n", 61) + `"}]`, "Channel name too long (limit: 60 characters)."},
		{`[{"name":"brand new"},{"description":"no name"}]`, "name key is missing from subscriptions[1]"},
		{`["general"]`, "subscriptions[0] is not a dict"},
	} {
		wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {c.subs}}, &e.bob), 400, "BAD_REQUEST", c.msg)
	}
	if after, err := e.st.channels(); err != nil || len(after) != len(before) {
		t.Errorf("channels after refused subscribes: got %d (%v), want %d", len(after), err, len(before))
	}

	mustSend(t, e.st, e.bob.user, e.general)
	r = e.requestAs(t, queryString, http.MethodDelete, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`["general","secret"]`}}, &e.bob)
	wantAPISuccess(t, r)
	if !reflect.DeepEqual(r.body["removed"], []any{"general"}) || !reflect.DeepEqual(r.body["not_removed"], []any{"secret"}) {
		t.Errorf("unsubscribe: got %s, want removed [general], not_removed [secret]", r.raw)
	}
	r = e.request(t, http.MethodDelete, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`["general","nope"]`}}, &e.alice)
	wantAPIError(t, r, 400, "BAD_REQUEST", "Channel(s) (nope) do not exist")
	if got := mustUnread(t, e.st, e.alice.user, e.general); len(got) != 1 {
		t.Errorf("alice's unread after a refused unsubscribe: got %v, want one", got)
	}
}

func TestChannels_ListAndLookUp(t *testing.T) {
	e := newTestEnv(t)
	names := func(a *account, params url.Values) []string {
		r := e.request(t, http.MethodGet, "/api/v1/streams", params, a)
		wantAPISuccess(t, r)
		var out []string
		for _, s := range r.body["streams"].([]any) {
			out = append(out, s.(map[string]any)["name"].(string))
		}
		return out
	}
	if got := names(&e.alice, nil); !slices.Equal(got, []string{"general", "secret"}) {
		t.Errorf("alice sees %v, want [general secret]", got)
	}
	if got := names(&e.bob, nil); !slices.Equal(got, []string{"general"}) {
		t.Errorf("bob sees %v, want [general]", got)
	}
	// include_all (include_all_active before feature level 356) is every
	// channel the caller may know of, and is open to everyone since.
	for _, param := range []string{"include_all", "include_all_active"} {
		if got := names(&e.admin, url.Values{param: {"true"}}); !slices.Equal(got, []string{"general", "secret"}) {
			t.Errorf("admin with %s sees %v, want both", param, got)
		}
		if got := names(&e.bob, url.Values{param: {"true"}}); !slices.Equal(got, []string{"general"}) {
			t.Errorf("bob with %s sees %v, want [general]", param, got)
		}
	}
	// include_can_access_content: what the caller may read, which for a
	// private channel an administrator may not.
	if got := names(&e.admin, url.Values{"include_can_access_content": {"true"}}); !slices.Equal(got, []string{"general"}) {
		t.Errorf("admin with include_can_access_content sees %v, want [general]", got)
	}
	if got := names(&e.alice, url.Values{"include_can_access_content": {"true"}, "include_public": {"false"}}); !slices.Equal(got, []string{"general", "secret"}) {
		t.Errorf("alice with include_can_access_content sees %v, want both", got)
	}
	if got := names(&e.alice, url.Values{"include_public": {"false"}, "include_subscribed": {"false"}}); len(got) != 0 {
		t.Errorf("alice with neither public nor subscribed sees %v, want none", got)
	}
	for _, param := range []string{"exclude_archived", "include_web_public", "include_default", "include_owner_subscribed"} {
		r := e.request(t, http.MethodGet, "/api/v1/streams", url.Values{param: {"true"}}, &e.alice)
		wantAPISuccess(t, r)
		if _, ignored := r.body["ignored_parameters_unsupported"]; ignored {
			t.Errorf("%s reported as ignored: %s", param, r.raw)
		}
		wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/streams", url.Values{param: {"yes"}}, &e.alice), 400, "BAD_REQUEST", param+" is not valid JSON")
	}

	// Each channel as Zulip describes it: its id, and whether it is private.
	r0 := e.request(t, http.MethodGet, "/api/v1/streams", nil, &e.alice)
	wantAPISuccess(t, r0)
	for _, raw := range r0.body["streams"].([]any) {
		st := raw.(map[string]any)
		want := map[string]channel{"general": e.general, "secret": e.secret}[st["name"].(string)]
		if st["stream_id"] != float64(want.ID) || st["invite_only"] != want.Private || st["description"] != want.Description {
			t.Errorf("%s: got stream_id %v, invite_only %v, description %q; want %d, %v, %q",
				st["name"], st["stream_id"], st["invite_only"], st["description"], want.ID, want.Private, want.Description)
		}
	}

	r := e.request(t, http.MethodGet, "/api/v1/get_stream_id", url.Values{"stream": {"General"}}, &e.bob)
	wantAPISuccess(t, r)
	if r.body["stream_id"] != float64(e.general.ID) {
		t.Errorf("stream_id: got %v, want %d", r.body["stream_id"], e.general.ID)
	}
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/get_stream_id", url.Values{"stream": {"secret"}}, &e.bob), 400, "BAD_REQUEST", "Invalid channel name 'secret'")
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/get_stream_id", nil, &e.bob), 400, "REQUEST_VARIABLE_MISSING", "Missing 'stream' argument")
}
