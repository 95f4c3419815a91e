package main

import (
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// PATCH /users/me/subscriptions is Zulip's update_subscriptions_backend:
// the add list subscribed, then the delete list unsubscribed, in one
// transaction, one answer with both halves' keys, and each half's events.
func TestUpdateSubscriptions_AddsThenDeletesInOneRequest(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["subscription","stream"]`}}).str("queue_id")
	r := e.request(t, http.MethodPatch, "/api/v1/users/me/subscriptions", url.Values{
		"add":    {`[{"name":"fresh","color":"#AABBCC","description":"new"}]`},
		"delete": {`["general"]`},
	}, &e.alice)
	wantAPISuccess(t, r)
	alice := strconv.FormatUint(e.alice.ID, 10)
	for key, want := range map[string]any{
		"subscribed":                     map[string]any{alice: []any{"fresh"}},
		"already_subscribed":             map[string]any{},
		"removed":                        []any{"general"},
		"not_removed":                    []any{},
		"new_subscription_messages_sent": true,
	} {
		if !reflect.DeepEqual(r.body[key], want) {
			t.Errorf("%s: got %v, want %v (%s)", key, r.body[key], want, r.raw)
		}
	}
	if got := e.subscribedNames(t, &e.alice); !slices.Equal(got, []string{"fresh", "secret"}) {
		t.Errorf("alice's subscriptions: got %v, want fresh and secret", got)
	}
	if c := e.subscriptionObject(t, &e.alice, "fresh")["color"]; c != "#aabbcc" {
		t.Errorf("fresh's colour: got %v, want the one asked for", c)
	}
	if got, want := eventSummary(e.pollNow(t, &e.alice, queue, -1)), []string{"stream/create", "subscription/add", "subscription/remove"}; !slices.Equal(got, want) {
		t.Errorf("alice's events: got %v, want %v", got, want)
	}

	// Only one half: the other half's keys are there, empty.
	r = e.request(t, http.MethodPatch, "/api/v1/users/me/subscriptions", url.Values{"delete": {`["fresh","general"]`}}, &e.alice)
	wantAPISuccess(t, r)
	if !reflect.DeepEqual(r.body["subscribed"], map[string]any{}) || !reflect.DeepEqual(r.body["removed"], []any{"fresh"}) ||
		!reflect.DeepEqual(r.body["not_removed"], []any{"general"}) {
		t.Errorf("delete only: got %s", r.raw)
	}
	r = e.request(t, http.MethodPatch, "/api/v1/users/me/subscriptions", url.Values{"add": {`[{"name":"general"},{"name":"secret"}]`}, "delete": {"null"}}, &e.alice)
	wantAPISuccess(t, r)
	if !reflect.DeepEqual(r.body["subscribed"], map[string]any{alice: []any{"general"}}) ||
		!reflect.DeepEqual(r.body["already_subscribed"], map[string]any{alice: []any{"secret"}}) || !reflect.DeepEqual(r.body["removed"], []any{}) {
		t.Errorf("add only: got %s", r.raw)
	}
}

// Every refusal of PATCH /users/me/subscriptions changes nothing: a
// delete half that fails undoes the add half before it, as Zulip's
// compose_views rolls its transaction back.
func TestUpdateSubscriptions_RefusalsChangeNothing(t *testing.T) {
	e := newTestEnv(t)
	guest, guestKey := mustCreateUser(t, e.st, "guest@example.com", roleGuest, false)
	if err := e.st.addSubscriptionForTest(guest, e.general); err != nil {
		t.Fatal(err)
	}
	queue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["subscription","stream"]`}}).str("queue_id")
	before := e.subscribedNames(t, &e.alice)
	for _, c := range []struct {
		who    *account
		params url.Values
		code   string
		msg    string
	}{
		{&e.alice, nil, "BAD_REQUEST", `Nothing to do. Specify at least one of "add" or "delete".`},
		{&e.alice, url.Values{"add": {"[]"}, "delete": {"[]"}}, "BAD_REQUEST", `Nothing to do. Specify at least one of "add" or "delete".`},
		{&e.alice, url.Values{"delete": {`"general"`}}, "BAD_REQUEST", "delete is not a list"},
		{&e.alice, url.Values{"delete": {`[1]`}}, "BAD_REQUEST", "delete[0] is not a string"},
		{&e.alice, url.Values{"add": {`{"name":"x"}`}}, "BAD_REQUEST", "add is not a list"},
		{&e.alice, url.Values{"add": {`["x"]`}}, "BAD_REQUEST", "add[0] is not a dict"},
		{&e.alice, url.Values{"add": {`[{"name":"x","color":"red"}]`}}, "BAD_REQUEST", "Invalid add[0]: Value error, add.color is not a valid hex color code"},
		{&e.alice, url.Values{"add": {`[{"name":"fresh"}]`}, "delete": {`["nowhere"]`}}, "BAD_REQUEST", "Channel(s) (nowhere) do not exist"},
		{&e.alice, url.Values{"add": {`[{"name":"fresh"}]`}, "delete": {`["secret"]`}, "principals": {"[" + strconv.FormatUint(e.bob.ID, 10) + "]"}}, "BAD_REQUEST", "Insufficient permission"},
		{&account{guest, guestKey}, url.Values{"delete": {`["general"]`}}, "BAD_REQUEST", "Not allowed for guest users"},
	} {
		wantAPIError(t, e.request(t, http.MethodPatch, "/api/v1/users/me/subscriptions", c.params, c.who), 400, c.code, c.msg)
	}
	if after := e.subscribedNames(t, &e.alice); !slices.Equal(after, before) {
		t.Errorf("alice's subscriptions: %v before, %v after the refusals", before, after)
	}
	if names := e.subscribedNames(t, &account{guest, guestKey}); !slices.Equal(names, []string{"general"}) {
		t.Errorf("the guest's subscriptions: got %v", names)
	}
	if _, err := e.st.accessibleChannel(e.owner.user, "fresh"); err == nil {
		t.Errorf("a refused request created channel fresh")
	}
	if events := e.pollNow(t, &e.alice, queue, -1); len(events) != 0 {
		t.Errorf("refusals told alice %v", eventSummary(events))
	}
}

// GET /users/{user_id}/subscriptions/{stream_id}: whether that user is
// subscribed, for a caller with the channel's metadata; Zulip's
// access_user_by_id (bots and strangers are "No such user") and
// access_stream_by_id without content access.
func TestSubscriptionStatus_AnswersWithZulipsAccessRules(t *testing.T) {
	e := newTestEnv(t)
	get := func(a *account, userID, channelID uint64) response {
		return e.request(t, http.MethodGet, "/api/v1/users/"+strconv.FormatUint(userID, 10)+"/subscriptions/"+strconv.FormatUint(channelID, 10), nil, a)
	}
	for _, c := range []struct {
		who     *account
		userID  uint64
		channel uint64
		want    bool
	}{
		{&e.bob, e.alice.ID, e.general.ID, true},
		{&e.bob, e.owner.ID, e.general.ID, false},
		{&e.alice, e.alice.ID, e.secret.ID, true},
		{&e.admin, e.alice.ID, e.secret.ID, true}, // metadata access suffices
	} {
		r := get(c.who, c.userID, c.channel)
		wantAPISuccess(t, r)
		if r.body["is_subscribed"] != c.want || len(r.body) != 3 {
			t.Errorf("user %d in channel %d: got %s, want is_subscribed %v", c.userID, c.channel, r.raw, c.want)
		}
	}
	gone, _ := mustCreateUser(t, e.st, "gone@example.com", roleMember, false)
	if err := e.st.setActive(gone.Email, false); err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, get(&e.bob, e.alice.ID, e.secret.ID), 400, "BAD_REQUEST", "Invalid channel ID")
	wantAPIError(t, get(&e.bob, e.alice.ID, 999999), 400, "BAD_REQUEST", "Invalid channel ID")
	wantAPIError(t, get(&e.bob, 999999, e.general.ID), 400, "BAD_REQUEST", "No such user")
	wantAPIError(t, get(&e.bob, e.bot.ID, e.general.ID), 400, "BAD_REQUEST", "No such user")
	wantAPIError(t, get(&e.bob, gone.ID, e.general.ID), 400, "BAD_REQUEST", "User is deactivated")
	wantAPIError(t, get(&e.bob, 999999, 999999), 400, "BAD_REQUEST", "No such user") // the user first, as Zulip
	if r := e.request(t, http.MethodGet, "/api/v1/users/x/subscriptions/1", nil, &e.bob); r.status != 404 {
		t.Errorf("a user id that is not digits: got %d, want 404", r.status)
	}
	if r := e.request(t, http.MethodPost, "/api/v1/users/"+strconv.FormatUint(e.alice.ID, 10)+"/subscriptions/1", nil, &e.bob); r.status != 405 {
		t.Errorf("POST: got %d, want 405", r.status)
	}
}
