package main

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
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

// streamNamed finds a channel or subscription object by name in a list.
func streamNamed(t *testing.T, list any, name string) map[string]any {
	t.Helper()
	items, _ := list.([]any)
	for _, item := range items {
		if o, _ := item.(map[string]any); o["name"] == name {
			return o
		}
	}
	t.Fatalf("no %s in %v", name, list)
	return nil
}

func (e *testEnv) streamObject(t *testing.T, a *account, name string) map[string]any {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/streams", url.Values{"include_all": {"true"}}, a)
	wantAPISuccess(t, r)
	return streamNamed(t, r.body["streams"], name)
}

func (e *testEnv) subscriptionObject(t *testing.T, a *account, name string) map[string]any {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/users/me/subscriptions", nil, a)
	wantAPISuccess(t, r)
	return streamNamed(t, r.body["subscriptions"], name)
}

func (e *testEnv) subscribedNames(t *testing.T, a *account) []string {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/users/me/subscriptions", nil, a)
	wantAPISuccess(t, r)
	var names []string
	for _, s := range r.body["subscriptions"].([]any) {
		names = append(names, s.(map[string]any)["name"].(string))
	}
	return names
}

func idKey(a account) string { return strconv.FormatUint(a.ID, 10) }

// A channel object carries every field of Zulip 11's channel, each with
// a value that tells the truth about zulite: nothing archived or
// web-public, no folders or retention policy, Zulip's default
// permissions, and the figures counted from the data.
func TestChannelObject_EveryFieldOfFeatureLevel421(t *testing.T) {
	e := newTestEnv(t)
	created := time.Unix(e.general.Created, 0)
	e.st.now = func() time.Time { return created } // messages are sent as the channel is made
	r := e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"made by alice"}]`}}, &e.alice)
	wantAPISuccess(t, r)

	general := e.streamObject(t, &e.alice, "general")
	want := map[string]any{
		"stream_id": float64(e.general.ID), "name": "general", "description": "", "rendered_description": "",
		"date_created": float64(e.general.Created), "creator_id": nil, "invite_only": false, "is_web_public": false,
		"history_public_to_subscribers": true, "is_archived": false, "first_message_id": nil, "folder_id": nil,
		"is_recently_active": true, "message_retention_days": nil, "stream_post_policy": 1.0, "is_announcement_only": false,
		"stream_weekly_traffic": nil, "subscriber_count": 2.0, "topics_policy": "inherit",
		"can_add_subscribers_group": 8.0, "can_administer_channel_group": 8.0, "can_delete_any_message_group": 8.0,
		"can_delete_own_message_group": 8.0, "can_move_messages_out_of_channel_group": 8.0,
		"can_move_messages_within_channel_group": 8.0, "can_remove_subscribers_group": 2.0, "can_send_message_group": 6.0,
		"can_subscribe_group": 8.0, "can_resolve_topics_group": 8.0,
	}
	if !reflect.DeepEqual(general, want) {
		t.Errorf("general:\n got %v\nwant %v", general, want)
	}
	// A channel made through the API is administered by its creator, as
	// an anonymous group (Zulip's channel_creator default).
	made := e.streamObject(t, &e.alice, "made by alice")
	if got, want := made["can_administer_channel_group"], map[string]any{"direct_members": []any{float64(e.alice.ID)}, "direct_subgroups": []any{}}; !reflect.DeepEqual(got, want) || made["creator_id"] != float64(e.alice.ID) {
		t.Errorf("made by alice: can_administer_channel_group %v, creator_id %v; want %v, %d", got, made["creator_id"], want, e.alice.ID)
	}

	// The figures: subscribers who are active, the first message, and
	// Zulip's weekly traffic once the channel is a week old.
	first := e.sendAs(t, e.bob, e.general, "t")
	if err := e.st.setActive(e.bob.Email, false); err != nil {
		t.Fatal(err)
	}
	general = e.streamObject(t, &e.alice, "general")
	if general["subscriber_count"] != 1.0 || general["first_message_id"] != float64(first) {
		t.Errorf("after a message and bob's deactivation: subscriber_count %v, first_message_id %v; want 1, %d", general["subscriber_count"], general["first_message_id"], first)
	}
	sub := e.subscriptionObject(t, &e.alice, "general")
	if sub["subscriber_count"] != 1.0 || sub["first_message_id"] != float64(first) {
		t.Errorf("alice's subscription: subscriber_count %v, first_message_id %v", sub["subscriber_count"], sub["first_message_id"])
	}
	r = e.request(t, http.MethodGet, "/api/v1/users/me/subscriptions", url.Values{"include_subscribers": {"true"}}, &e.alice)
	if got := streamNamed(t, r.body["subscriptions"], "general")["subscribers"]; !reflect.DeepEqual(got, []any{float64(e.alice.ID)}) {
		t.Errorf("subscribers after bob's deactivation: got %v, want alice alone", got)
	}
	for i := 0; i < 11; i++ {
		e.sendAs(t, e.alice, e.general, "t")
	}
	for _, c := range []struct {
		days           int
		traffic        any
		recentlyActive bool
	}{
		{6, nil, true},    // too young to say
		{10, 8.0, true},   // 12 messages in 10 days: 12*7/10 a week
		{28, 3.0, true},   // 12 in four weeks
		{57, 0.0, true},   // none in the last four weeks
		{181, 0.0, false}, // nor in the last 180 days
	} {
		e.st.now = func() time.Time { return created.Add(time.Duration(c.days) * 24 * time.Hour) }
		general = e.streamObject(t, &e.alice, "general")
		if general["stream_weekly_traffic"] != c.traffic || general["is_recently_active"] != c.recentlyActive {
			t.Errorf("after %d days: stream_weekly_traffic %v, is_recently_active %v; want %v, %v", c.days, general["stream_weekly_traffic"], general["is_recently_active"], c.traffic, c.recentlyActive)
		}
	}
}

// A subscription object adds the subscriber's settings: a lowercase
// colour, unmuted, unpinned, and notification settings that inherit
// the user's defaults (null), as Zulip's GET /users/me/subscriptions
// answers them.
func TestSubscriptionObject_SettingsAndColour(t *testing.T) {
	e := newTestEnv(t)
	sub := e.subscriptionObject(t, &e.alice, "general")
	if color, _ := sub["color"].(string); !regexp.MustCompile(`^#[0-9a-f]{6}$`).MatchString(color) {
		t.Errorf("color: got %q, want lowercase #rrggbb", color)
	}
	for field, want := range map[string]any{"is_muted": false, "in_home_view": true, "pin_to_top": false, "desktop_notifications": nil,
		"audible_notifications": nil, "push_notifications": nil, "email_notifications": nil, "wildcard_mentions_notify": nil} {
		if got, ok := sub[field]; !ok || got != want {
			t.Errorf("%s: got %v (present %v), want %v", field, got, ok, want)
		}
	}
	if _, ok := sub["subscribers"]; ok {
		t.Errorf("subscribers sent without include_subscribers")
	}
	r := e.request(t, http.MethodGet, "/api/v1/users/me/subscriptions", url.Values{"include_subscribers": {"partial"}}, &e.alice)
	wantAPISuccess(t, r)
	if got := streamNamed(t, r.body["subscriptions"], "general")["subscribers"]; len(got.([]any)) != 2 {
		t.Errorf("include_subscribers=partial: got subscribers %v, want both", got)
	}
}

// Principals name who is subscribed: the caller is subscribed only when
// named (before, the caller was subscribed whoever the principals
// named), and the answer is keyed by the subscribed users' ids.
func TestSubscribe_PrincipalsSubscribeThoseNamedOnly(t *testing.T) {
	e := newTestEnv(t)
	post := func(a *account, params url.Values) response {
		return e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", params, a)
	}
	r := post(&e.alice, url.Values{"subscriptions": {`[{"name":"team"}]`}, "principals": {"[" + idKey(e.bob) + "]"}})
	wantAPISuccess(t, r)
	if got, want := r.body["subscribed"], map[string]any{idKey(e.bob): []any{"team"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("subscribed: got %v, want %v", got, want)
	}
	if slices.Contains(e.subscribedNames(t, &e.alice), "team") {
		t.Errorf("alice was subscribed to team, which she made for bob")
	}
	if !slices.Contains(e.subscribedNames(t, &e.bob), "team") {
		t.Errorf("bob was not subscribed to team")
	}
	if got := e.streamObject(t, &e.bob, "team")["creator_id"]; got != float64(e.alice.ID) {
		t.Errorf("team's creator: got %v, want alice", got)
	}

	// By e-mail (any case), several at once, the caller among them.
	r = post(&e.alice, url.Values{"subscriptions": {`[{"name":"general"},{"name":"team"}]`}, "principals": {`["OWNER@example.com","alice@example.com"]`}})
	wantAPISuccess(t, r)
	wantSubscribed := map[string]any{idKey(e.owner): []any{"general", "team"}, idKey(e.alice): []any{"team"}}
	wantAlready := map[string]any{idKey(e.alice): []any{"general"}}
	if !reflect.DeepEqual(r.body["subscribed"], wantSubscribed) || !reflect.DeepEqual(r.body["already_subscribed"], wantAlready) {
		t.Errorf("by e-mail: got subscribed %v, already %v; want %v, %v", r.body["subscribed"], r.body["already_subscribed"], wantSubscribed, wantAlready)
	}
	// Zulip would have sent the owner a Notification Bot message about
	// general; zulite sends none and says so.
	if r.body["new_subscription_messages_sent"] != false {
		t.Errorf("new_subscription_messages_sent: got %v, want false", r.body["new_subscription_messages_sent"])
	}
	r = post(&e.bob, url.Values{"subscriptions": {`[{"name":"general"}]`}, "principals": {"[" + idKey(e.bob) + "]"}})
	if r.body["new_subscription_messages_sent"] != true || !reflect.DeepEqual(r.body["already_subscribed"], map[string]any{idKey(e.bob): []any{"general"}}) {
		t.Errorf("bob naming himself: got %s", r.raw)
	}
	r = post(&e.bob, url.Values{"subscriptions": {`[{"name":"general"}]`}, "send_new_subscription_messages": {"false"}})
	if _, ok := r.body["new_subscription_messages_sent"]; ok {
		t.Errorf("new_subscription_messages_sent without send_new_subscription_messages: %s", r.raw)
	}

	// A refused request subscribes nobody and creates nothing.
	guest := mustCreateGuest(t, e)
	deactivated, _ := mustCreateUser(t, e.st, "gone@example.com", roleMember, false)
	if err := e.st.setActive(deactivated.Email, false); err != nil {
		t.Fatal(err)
	}
	before, _ := e.st.channels()
	for _, c := range []struct {
		who    *account
		params url.Values
		msg    string
	}{
		{&e.alice, url.Values{"subscriptions": {`[{"name":"new"}]`}, "principals": {"[" + idKey(e.bob) + ",999]"}}, "No such user"},
		{&e.alice, url.Values{"subscriptions": {`[{"name":"new"}]`}, "principals": {`["bob@example.com","nobody@example.com"]`}}, "No such user"},
		{&e.alice, url.Values{"subscriptions": {`[{"name":"new"}]`}, "principals": {"[" + strconv.FormatUint(deactivated.ID, 10) + "]"}}, "User is deactivated"},
		{&e.bob, url.Values{"subscriptions": {`[{"name":"new"},{"name":"secret"}]`}, "principals": {"[" + idKey(e.owner) + "]"}}, "Unable to access channel (secret)."},
		{guest, url.Values{"subscriptions": {`[{"name":"new"}]`}}, "Not allowed for guest users"},
		{&e.alice, url.Values{"subscriptions": {`[{"name":"new"}]`}, "principals": {`"bob@example.com"`}}, "principals is not a list"},
	} {
		wantAPIError(t, post(c.who, c.params), 400, "BAD_REQUEST", c.msg)
	}
	if after, _ := e.st.channels(); len(after) != len(before) {
		t.Errorf("channels after refusals: got %d, want %d", len(after), len(before))
	}
	if slices.Contains(e.subscribedNames(t, &e.bob), "new") || slices.Contains(e.subscribedNames(t, &e.owner), "secret") {
		t.Errorf("a refused request subscribed someone")
	}

	// authorization_errors_fatal=false: the rest goes ahead, and the
	// channels refused are listed.
	r = post(&e.bob, url.Values{"subscriptions": {`[{"name":"general"},{"name":"secret"}]`}, "principals": {"[" + idKey(e.admin) + "]"}, "authorization_errors_fatal": {"false"}})
	wantAPISuccess(t, r)
	if !reflect.DeepEqual(r.body["unauthorized"], []any{"secret"}) || !reflect.DeepEqual(r.body["subscribed"], map[string]any{idKey(e.admin): []any{"general"}}) {
		t.Errorf("authorization_errors_fatal=false: got %s", r.raw)
	}
	if r := post(&e.bob, url.Values{"subscriptions": {`[{"name":"general"}]`}}); r.body["unauthorized"] != nil {
		t.Errorf("unauthorized sent with authorization_errors_fatal left true: %s", r.raw)
	}
}

func mustCreateGuest(t *testing.T, e *testEnv) *account {
	t.Helper()
	u, key := mustCreateUser(t, e.st, "guest@example.com", roleGuest, false)
	return &account{u, key}
}

// The parameters that configure a new channel are Zulip 11's: the
// group settings zulite acts on are stored and honoured, the others
// keep their defaults, and what zulite cannot do is refused with
// Zulip's words, never accepted and ignored.
func TestSubscribe_NewChannelSettings(t *testing.T) {
	e := newTestEnv(t)
	post := func(a *account, params url.Values) response {
		return e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", params, a)
	}
	// Only administrators may post in an announcement channel.
	r := post(&e.alice, url.Values{"subscriptions": {`[{"name":"news","description":"line one\nline two"}]`}, "can_send_message_group": {"2"}, "principals": {"[" + idKey(e.alice) + "," + idKey(e.bob) + "]"}})
	wantAPISuccess(t, r)
	news := e.streamObject(t, &e.alice, "news")
	if news["can_send_message_group"] != 2.0 || news["stream_post_policy"] != 2.0 || news["is_announcement_only"] != true || news["description"] != "line one line two" {
		t.Errorf("news: got %v", news)
	}
	send := func(a *account) response {
		return e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"news"}, "topic": {"t"}, "content": {"hello"}}, a)
	}
	wantAPIError(t, send(&e.bob), 400, "BAD_REQUEST", "You do not have permission to post in this channel.")
	wantAPISuccess(t, send(&e.admin))

	// can_subscribe_group lets its members join a private channel, and
	// read it, without an invitation.
	r = post(&e.alice, url.Values{"subscriptions": {`[{"name":"club"}]`}, "invite_only": {"true"}, "can_subscribe_group": {`{"direct_members":[` + idKey(e.bob) + `],"direct_subgroups":[]}`}})
	wantAPISuccess(t, r)
	wantAPIError(t, post(&e.owner, url.Values{"subscriptions": {`[{"name":"club"}]`}}), 400, "BAD_REQUEST", "Unable to access channel (club).")
	wantAPISuccess(t, post(&e.bob, url.Values{"subscriptions": {`[{"name":"club"}]`}}))
	if got := e.subscriptionObject(t, &e.bob, "club")["can_subscribe_group"]; !reflect.DeepEqual(got, map[string]any{"direct_members": []any{float64(e.bob.ID)}, "direct_subgroups": []any{}}) {
		t.Errorf("club's can_subscribe_group: got %v", got)
	}
	// An anonymous group of one named group is that group.
	wantAPISuccess(t, post(&e.alice, url.Values{"subscriptions": {`[{"name":"admins"}]`}, "can_add_subscribers_group": {`{"direct_members":[],"direct_subgroups":[2]}`}}))
	if got := e.streamObject(t, &e.alice, "admins")["can_add_subscribers_group"]; got != 2.0 {
		t.Errorf("admins' can_add_subscribers_group: got %v, want 2", got)
	}

	before, _ := e.st.channels()
	for _, c := range []struct {
		params url.Values
		code   string
		msg    string
	}{
		{url.Values{"can_send_message_group": {"99"}}, "BAD_REQUEST", "Invalid user group"},
		{url.Values{"can_send_message_group": {`{"direct_members":[999],"direct_subgroups":[]}`}}, "BAD_REQUEST", "Invalid user ID: 999"},
		{url.Values{"can_send_message_group": {`{"direct_members":[` + idKey(e.bob) + `],"direct_subgroups":[42]}`}}, "BAD_REQUEST", "Invalid user group ID: 42"},
		{url.Values{"can_add_subscribers_group": {"6"}}, "BAD_REQUEST", "'can_add_subscribers_group' setting cannot be set to 'role:everyone' group."},
		{url.Values{"can_send_message_group": {"7"}}, "BAD_REQUEST", "'can_send_message_group' setting cannot be set to 'role:internet' group."},
		{url.Values{"can_send_message_group": {`"2"`}}, "BAD_REQUEST", "can_send_message_group is not a dict"},
		{url.Values{"can_delete_own_message_group": {"5"}}, "BAD_REQUEST", "Insufficient permission"}, // can_set_delete_message_policy_group is role:nobody
		{url.Values{"topics_policy": {`"disable_empty_topic"`}}, "BAD_REQUEST", "Insufficient permission"},
		{url.Values{"topics_policy": {`"sometimes"`}}, "BAD_REQUEST", "Invalid topics_policy"},
		{url.Values{"folder_id": {"1"}}, "BAD_REQUEST", "Invalid channel folder ID"},
		{url.Values{"is_web_public": {"true"}}, "BAD_REQUEST", "Web-public channels are not enabled."},
		{url.Values{"message_retention_days": {`"unlimited"`}}, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner"},
		{url.Values{"message_retention_days": {`"forever"`}}, "REQUEST_VARIABLE_INVALID", "Bad value for 'message_retention_days': forever"},
		{url.Values{"is_default_stream": {"true"}}, "BAD_REQUEST", "Insufficient permission"},
		{url.Values{"invite_only": {"true"}, "history_public_to_subscribers": {"false"}}, "BAD_REQUEST", "Invalid parameters"},
		{url.Values{"subscriptions": {`[{"name":"hued","color":"blue"}]`}}, "BAD_REQUEST", "Invalid subscriptions[0]: Value error, add.color is not a valid hex color code"},
	} {
		if c.params["subscriptions"] == nil {
			c.params.Set("subscriptions", `[{"name":"refused"}]`)
		}
		wantAPIError(t, post(&e.alice, c.params), 400, c.code, c.msg)
	}
	if after, _ := e.st.channels(); len(after) != len(before) {
		t.Errorf("channels after refusals: got %d, want %d", len(after), len(before))
	}
	// Settings that only shape a new channel do not matter for an
	// existing one, as in Zulip; the defaults may always be given.
	wantAPISuccess(t, post(&e.alice, url.Values{"subscriptions": {`[{"name":"general"}]`}, "is_web_public": {"true"}, "message_retention_days": {"30"}}))
	wantAPISuccess(t, post(&e.alice, url.Values{"subscriptions": {`[{"name":"defaults"}]`}, "can_delete_own_message_group": {"8"}, "topics_policy": {`"inherit"`},
		"can_remove_subscribers_group": {"2"}, "announce": {"true"}, "folder_id": {"null"}, "message_retention_days": {`"realm_default"`}}))
	// A colour for the new subscriptions, kept in lowercase.
	wantAPISuccess(t, post(&e.alice, url.Values{"subscriptions": {`[{"name":"hued","color":"#ABCDEF"}]`}}))
	if got := e.subscriptionObject(t, &e.alice, "hued")["color"]; got != "#abcdef" {
		t.Errorf("hued's colour: got %v, want #abcdef", got)
	}
}

// An administrator, or a member of the channel's
// can_remove_subscribers_group, may unsubscribe others; principals never
// unsubscribe the caller instead.
func TestUnsubscribe_PrincipalsLeaveOthersAlone(t *testing.T) {
	e := newTestEnv(t)
	del := func(a *account, params url.Values) response {
		return e.request(t, http.MethodDelete, "/api/v1/users/me/subscriptions", params, a)
	}
	wantAPIError(t, del(&e.alice, url.Values{"subscriptions": {`["general"]`}, "principals": {"[" + idKey(e.bob) + "]"}}), 400, "BAD_REQUEST", "Insufficient permission")
	if !slices.Contains(e.subscribedNames(t, &e.alice), "general") || !slices.Contains(e.subscribedNames(t, &e.bob), "general") {
		t.Fatalf("a refused unsubscription changed who is subscribed")
	}
	wantAPIError(t, del(&e.admin, url.Values{"subscriptions": {`["general"]`}, "principals": {"[999]"}}), 400, "BAD_REQUEST", "No such user")
	e.sendAs(t, e.alice, e.general, "t") // unread for bob
	r := del(&e.admin, url.Values{"subscriptions": {`["general","secret"]`}, "principals": {`["bob@example.com"]`}})
	wantAPISuccess(t, r)
	if !reflect.DeepEqual(r.body["removed"], []any{"general"}) || !reflect.DeepEqual(r.body["not_removed"], []any{"secret"}) {
		t.Errorf("admin removing bob: got %s", r.raw)
	}
	if got := e.subscribedNames(t, &e.bob); slices.Contains(got, "general") {
		t.Errorf("bob's subscriptions after the admin removed him: %v", got)
	}
	if got := mustUnread(t, e.st, e.bob.user, e.general); len(got) != 0 {
		t.Errorf("bob's unread in a channel he was removed from: %v", got)
	}
}

// GET /streams/{stream_id}: one channel, for anyone who may know of it
// (an administrator may, of a private channel they cannot read).
func TestChannelByID_OneChannelForThoseWhoMayKnowOfIt(t *testing.T) {
	e := newTestEnv(t)
	get := func(a *account, id string) response {
		return e.request(t, http.MethodGet, "/api/v1/streams/"+id, nil, a)
	}
	secretID := strconv.FormatUint(e.secret.ID, 10)
	for _, a := range []*account{&e.alice, &e.admin} {
		r := get(a, secretID)
		wantAPISuccess(t, r)
		if got, _ := r.body["stream"].(map[string]any); got["name"] != "secret" || got["invite_only"] != true || got["subscriber_count"] != 1.0 {
			t.Errorf("%s: got %v", a.Email, got)
		}
	}
	wantAPIError(t, get(&e.bob, secretID), 400, "BAD_REQUEST", "Invalid channel ID")
	wantAPIError(t, get(&e.alice, "9999"), 400, "BAD_REQUEST", "Invalid channel ID")
	wantAPIError(t, get(&e.alice, "99999999999999999999999"), 400, "BAD_REQUEST", "Invalid channel ID")
	wantAPIError(t, get(&e.alice, "abc"), 404, "BAD_REQUEST", "Not Found")
	if r := e.request(t, http.MethodPut, "/api/v1/streams/"+secretID, nil, nil); r.status != 405 || r.header.Get("Allow") != "DELETE, GET, PATCH" {
		t.Errorf("PUT: got %d, Allow %q; want 405, DELETE, GET, PATCH", r.status, r.header.Get("Allow"))
	}
}

// GET /users/me/{stream_id}/topics: each topic once, under the name its
// newest message gives it, the most recently active first; the empty
// topic is "general chat" for clients that did not ask for it.
func TestChannelTopics_NewestFirstUnderTheirNewestName(t *testing.T) {
	e := newTestEnv(t)
	e.sendAs(t, e.bob, e.general, "Lunch")
	e.sendAs(t, e.bob, e.general, "dinner")
	empty := e.sendAs(t, e.bob, e.general, "")
	lunch2 := e.sendAs(t, e.alice, e.general, "LUNCH")
	dinner := e.sendAs(t, e.bob, e.general, "Dinner")
	hidden := e.sendAs(t, e.alice, e.secret, "hidden")
	get := func(a *account, id uint64, params url.Values) response {
		return e.request(t, http.MethodGet, "/api/v1/users/me/"+strconv.FormatUint(id, 10)+"/topics", params, a)
	}
	r := get(&e.bob, e.general.ID, nil)
	wantAPISuccess(t, r)
	want := []any{
		map[string]any{"name": "Dinner", "max_id": float64(dinner)},
		map[string]any{"name": "LUNCH", "max_id": float64(lunch2)},
		map[string]any{"name": "general chat", "max_id": float64(empty)},
	}
	if !reflect.DeepEqual(r.body["topics"], want) {
		t.Errorf("topics: got %v, want %v", r.body["topics"], want)
	}
	if r := get(&e.owner, e.general.ID, nil); !reflect.DeepEqual(r.body["topics"], want) {
		t.Errorf("a public channel's topics for a non-subscriber: got %s", r.raw)
	}
	want[2] = map[string]any{"name": "", "max_id": float64(empty)}
	if r := get(&e.bob, e.general.ID, url.Values{"allow_empty_topic_name": {"true"}}); !reflect.DeepEqual(r.body["topics"], want) {
		t.Errorf("with allow_empty_topic_name: got %v, want %v", r.body["topics"], want)
	}
	if r := get(&e.alice, e.secret.ID, nil); !reflect.DeepEqual(r.body["topics"], []any{map[string]any{"name": "hidden", "max_id": float64(hidden)}}) {
		t.Errorf("secret's topics for alice: got %s", r.raw)
	}
	wantAPIError(t, get(&e.bob, e.secret.ID, nil), 400, "BAD_REQUEST", "Invalid channel ID")
	wantAPIError(t, get(&e.admin, e.secret.ID, nil), 400, "BAD_REQUEST", "Invalid channel ID")
	wantAPIError(t, get(&e.bob, 9999, nil), 400, "BAD_REQUEST", "Invalid channel ID")
	channel, _ := e.st.createChannel("quiet", "", false, 0)
	if r := get(&e.bob, channel.ID, nil); !reflect.DeepEqual(r.body["topics"], []any{}) {
		t.Errorf("a channel without messages: got %s", r.raw)
	}
}

// POST /users/me/subscriptions/properties: the subscriber's settings,
// stored and shown, and told to the user's queues as Zulip tells them;
// every change is checked before any is made.
func TestSubscriptionProperties_StoredShownAndTold(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["subscription"]`}}).str("queue_id")
	set := func(a *account, data string) response {
		return e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions/properties", url.Values{"subscription_data": {data}}, a)
	}
	id := strconv.FormatUint(e.general.ID, 10)
	r := set(&e.alice, `[{"stream_id":`+id+`,"property":"pin_to_top","value":true},{"stream_id":`+id+`,"property":"is_muted","value":true},`+
		`{"stream_id":`+id+`,"property":"color","value":"#AABBCC"},{"stream_id":`+id+`,"property":"desktop_notifications","value":false},`+
		`{"stream_id":`+id+`,"property":"wildcard_mentions_notify","value":true}]`)
	wantAPISuccess(t, r)
	sub := e.subscriptionObject(t, &e.alice, "general")
	for field, want := range map[string]any{"pin_to_top": true, "is_muted": true, "in_home_view": false, "color": "#aabbcc",
		"desktop_notifications": false, "wildcard_mentions_notify": true, "push_notifications": nil} {
		if sub[field] != want {
			t.Errorf("%s: got %v, want %v", field, sub[field], want)
		}
	}
	var got []string
	for _, ev := range e.pollNow(t, &e.alice, queue, -1) {
		if ev["type"] != "subscription" || ev["op"] != "update" || ev["stream_id"] != float64(e.general.ID) || len(ev) != 6 {
			t.Errorf("event %v: want a subscription update of general", ev)
		}
		got = append(got, ev["property"].(string)+"="+strings.Trim(string(mustJSON(t, ev["value"])), `"`))
	}
	want := []string{"pin_to_top=true", "in_home_view=false", "is_muted=true", "color=#aabbcc", "desktop_notifications=false", "wildcard_mentions_notify=true"}
	if !slices.Equal(got, want) {
		t.Errorf("events: got %v, want %v", got, want)
	}
	wantAPISuccess(t, set(&e.alice, `[{"stream_id":`+id+`,"property":"in_home_view","value":true}]`))
	if sub := e.subscriptionObject(t, &e.alice, "general"); sub["is_muted"] != false {
		t.Errorf("in_home_view=true left is_muted %v", sub["is_muted"])
	}

	secretID := strconv.FormatUint(e.secret.ID, 10)
	for _, c := range []struct {
		who  *account
		data string
		msg  string
	}{
		{&e.alice, `{"stream_id":` + id + `}`, "subscription_data is not a list"},
		{&e.alice, `[7]`, "subscription_data[0] is not a dict"},
		{&e.alice, `[{"stream_id":` + id + `,"value":true}]`, "property key is missing from subscription_data[0]"},
		{&e.alice, `[{"stream_id":"x","property":"pin_to_top","value":true}]`, `subscription_data[0]["stream_id"] is not an integer`},
		{&e.alice, `[{"stream_id":` + id + `,"property":"loud","value":true}]`, "Unknown subscription property: loud"},
		{&e.alice, `[{"stream_id":` + id + `,"property":"is_muted","value":"yes"}]`, "is_muted is not a boolean"},
		{&e.alice, `[{"stream_id":` + id + `,"property":"color","value":"red"}]`, "Invalid subscription_data[0]: Value error, color is not a valid hex color code"},
		{&e.alice, `[{"stream_id":` + id + `,"property":"pin_to_top","value":false},{"stream_id":9999,"property":"pin_to_top","value":false}]`, "Invalid channel ID"},
		{&e.bob, `[{"stream_id":` + secretID + `,"property":"pin_to_top","value":true}]`, "Invalid channel ID"},
		{&e.owner, `[{"stream_id":` + id + `,"property":"pin_to_top","value":true}]`, "Not subscribed to channel ID " + id},
	} {
		wantAPIError(t, set(c.who, c.data), 400, "BAD_REQUEST", c.msg)
	}
	if sub := e.subscriptionObject(t, &e.alice, "general"); sub["pin_to_top"] != true {
		t.Errorf("a refused request unpinned general")
	}
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions/properties", nil, &e.alice), 400, "REQUEST_VARIABLE_MISSING", "Missing 'subscription_data' argument")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// eventSummary is an event's type and op, to compare sequences.
func eventSummary(events []map[string]any) []string {
	var list []string
	for _, ev := range events {
		list = append(list, ev["type"].(string)+"/"+ev["op"].(string))
	}
	return list
}

// Subscribing tells each queue its part as Zulip does: a new channel's
// creation first (a client must know a channel before its subscription
// to it: zulip-flutter asserts it), to everyone who may see the
// channel; the full subscription objects to those who joined; and who
// joined to everyone else who follows the channel's subscribers.
func TestEvents_SubscribeTellsCreationSubscriptionThenPeers(t *testing.T) {
	e := newTestEnv(t)
	queues := map[string]string{}
	for _, a := range []*account{&e.alice, &e.bob, &e.owner, &e.admin} {
		queues[a.Email] = e.registerQueue(t, a, url.Values{"event_types": {`["stream","subscription"]`}}).str("queue_id")
	}
	seen := map[string]int{}
	poll := func(a *account) []map[string]any { // the events since the last poll
		if _, ok := seen[a.Email]; !ok {
			seen[a.Email] = -1
		}
		events := e.pollNow(t, a, queues[a.Email], seen[a.Email])
		if len(events) > 0 {
			seen[a.Email] = int(events[len(events)-1]["id"].(float64))
		}
		return events
	}

	r := e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"fresh"}]`}, "principals": {"[" + idKey(e.alice) + "," + idKey(e.bob) + "]"}}, &e.alice)
	wantAPISuccess(t, r)
	fresh := e.streamObject(t, &e.alice, "fresh")
	// Its creation is told as it was before anyone joined: subscriber
	// counts kept from peer events then count each joiner once.
	freshCreated := maps.Clone(fresh)
	freshCreated["subscriber_count"] = 0.0
	for _, c := range []struct {
		who  *account
		want []string
	}{
		{&e.alice, []string{"stream/create", "subscription/add"}},
		{&e.bob, []string{"stream/create", "subscription/add"}},
		{&e.owner, []string{"stream/create", "subscription/peer_add"}},
		{&e.admin, []string{"stream/create", "subscription/peer_add"}},
	} {
		events := poll(c.who)
		if got := eventSummary(events); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.who.Email, got, c.want)
			continue
		}
		created := events[0]["streams"].([]any)
		if len(created) != 1 || !reflect.DeepEqual(created[0], freshCreated) {
			t.Errorf("%s: stream/create got %v, want %v", c.who.Email, created, freshCreated)
		}
		switch events[1]["op"] {
		case "add":
			subs := events[1]["subscriptions"].([]any)
			sub := subs[0].(map[string]any)
			if len(subs) != 1 || sub["name"] != "fresh" || sub["subscriber_count"] != 2.0 || !reflect.DeepEqual(sub["subscribers"], []any{float64(e.alice.ID), float64(e.bob.ID)}) {
				t.Errorf("%s: subscription/add got %v", c.who.Email, subs)
			}
			for field := range fresh {
				if _, ok := sub[field]; !ok {
					t.Errorf("%s: subscription/add lacks %s", c.who.Email, field)
				}
			}
		case "peer_add":
			want := map[string]any{"type": "subscription", "op": "peer_add", "stream_ids": []any{fresh["stream_id"]}, "user_ids": []any{float64(e.alice.ID), float64(e.bob.ID)}, "id": 1.0}
			if !reflect.DeepEqual(events[1], want) {
				t.Errorf("%s: peer_add got %v, want %v", c.who.Email, events[1], want)
			}
		}
	}

	// Joining an existing public channel: peers hear of it, nobody hears
	// of a creation.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"general"}]`}}, &e.owner))
	if got := eventSummary(poll(&e.owner)); !slices.Equal(got, []string{"subscription/add"}) {
		t.Errorf("owner joining general: got %v", got)
	}
	if got := eventSummary(poll(&e.bob)); !slices.Equal(got, []string{"subscription/peer_add"}) {
		t.Errorf("bob, when the owner joins general: got %v", got)
	}
	for _, a := range []*account{&e.alice, &e.admin} {
		if got := eventSummary(poll(a)); !slices.Equal(got, []string{"subscription/peer_add"}) {
			t.Errorf("%s, when the owner joins general: got %v", a.Email, got)
		}
	}

	// A new private channel: its creation only to those who may see it
	// (its subscribers and the administrators), its peers likewise.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"hush"}]`}, "invite_only": {"true"}}, &e.alice))
	for who, want := range map[*account][]string{
		&e.alice: {"stream/create", "subscription/add"},
		&e.admin: {"stream/create", "subscription/peer_add"},
		&e.owner: {"stream/create", "subscription/peer_add"},
		&e.bob:   nil,
	} {
		if got := eventSummary(poll(who)); !slices.Equal(got, want) {
			t.Errorf("%s, for a new private channel: got %v, want %v", who.Email, got, want)
		}
	}
	// Joining a private channel from outside: its creation first.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"hush"}]`}, "principals": {"[" + idKey(e.bob) + "]"}}, &e.alice))
	events := poll(&e.bob)
	if got := eventSummary(events); !slices.Equal(got, []string{"stream/create", "subscription/add"}) {
		t.Fatalf("bob joining hush: got %v", got)
	}
	before, _ := events[0]["streams"].([]any)[0].(map[string]any)
	after, _ := events[1]["subscriptions"].([]any)[0].(map[string]any)
	if before["subscriber_count"] != 1.0 || after["subscriber_count"] != 2.0 {
		t.Errorf("bob joining hush: subscriber_count %v in the creation, %v in the subscription; want 1, 2", before["subscriber_count"], after["subscriber_count"])
	}
}

// Leaving tells the leaver, those who follow the channel's subscribers,
// and, for a private channel, tells the leaver it is gone.
func TestEvents_UnsubscribeTellsRemovalThenPeers(t *testing.T) {
	e := newTestEnv(t)
	alice := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["stream","subscription"]`}}).str("queue_id")
	bob := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["stream","subscription"]`}}).str("queue_id")
	wantAPISuccess(t, e.request(t, http.MethodDelete, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`["general","secret"]`}}, &e.alice))
	events := e.pollNow(t, &e.alice, alice, -1)
	if got := eventSummary(events); !slices.Equal(got, []string{"subscription/remove", "stream/delete"}) {
		t.Fatalf("alice: got %v", got)
	}
	wantRemove := []any{map[string]any{"name": "general", "stream_id": float64(e.general.ID)}, map[string]any{"name": "secret", "stream_id": float64(e.secret.ID)}}
	if !reflect.DeepEqual(events[0]["subscriptions"], wantRemove) {
		t.Errorf("subscription/remove: got %v, want %v", events[0]["subscriptions"], wantRemove)
	}
	if !reflect.DeepEqual(events[1]["stream_ids"], []any{float64(e.secret.ID)}) || !reflect.DeepEqual(events[1]["streams"], []any{map[string]any{"stream_id": float64(e.secret.ID)}}) {
		t.Errorf("stream/delete: got %v, want secret", events[1])
	}
	events = e.pollNow(t, &e.bob, bob, -1)
	want := []map[string]any{{"type": "subscription", "op": "peer_remove", "stream_ids": []any{float64(e.general.ID)}, "user_ids": []any{float64(e.alice.ID)}, "id": 0.0}}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("bob: got %v, want %v", events, want)
	}
}
