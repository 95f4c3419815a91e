package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"go.etcd.io/bbolt"
)

func reactionsPath(id uint64) string {
	return "/api/v1/messages/" + strconv.FormatUint(id, 10) + "/reactions"
}

// reactionsOn is a message's reactions as GET /messages lists them.
func (e *testEnv) reactionsOn(t *testing.T, a *account, id uint64) []any {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/messages", url.Values{"anchor": {strconv.FormatUint(id, 10)}, "num_before": {"0"}, "num_after": {"0"},
		"narrow": {`[["channel","general"]]`}}, a)
	wantAPISuccess(t, r)
	msgs := r.body["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("GET /messages anchored at %d: got %d messages", id, len(msgs))
	}
	return msgs[0].(map[string]any)["reactions"].([]any)
}

func TestReactions_AddAndRemoveAsZulip(t *testing.T) {
	e := newTestEnv(t)
	id := e.sendAs(t, e.bob, e.general, "lunch")
	path := reactionsPath(id)
	alice, bob := float64(e.alice.ID), float64(e.bob.ID)

	// By name alone the code is looked up; with code and type they must
	// name one emoji; aliases keep the name they were given.
	wantAPISuccess(t, e.request(t, http.MethodPost, path, url.Values{"emoji_name": {"octopus"}}, &e.alice))
	wantAPISuccess(t, e.request(t, http.MethodPost, path, url.Values{"emoji_name": {"thumbs_up"}, "emoji_code": {"1f44d"}, "reaction_type": {"unicode_emoji"}}, &e.alice))
	wantAPISuccess(t, e.request(t, http.MethodPost, path, url.Values{"emoji_name": {"zulip"}}, &e.alice))
	// A second user's reaction with the same emoji is a vote: it takes
	// the first reaction's name.
	wantAPISuccess(t, e.request(t, http.MethodPost, path, url.Values{"emoji_name": {"+1"}}, &e.bob))
	want := []any{
		map[string]any{"emoji_name": "octopus", "emoji_code": "1f419", "reaction_type": "unicode_emoji", "user_id": alice},
		map[string]any{"emoji_name": "thumbs_up", "emoji_code": "1f44d", "reaction_type": "unicode_emoji", "user_id": alice},
		map[string]any{"emoji_name": "zulip", "emoji_code": "zulip", "reaction_type": "zulip_extra_emoji", "user_id": alice},
		map[string]any{"emoji_name": "thumbs_up", "emoji_code": "1f44d", "reaction_type": "unicode_emoji", "user_id": bob},
	}
	if got := e.reactionsOn(t, &e.alice, id); !jsonEqual(got, want) {
		t.Errorf("reactions: got %v, want %v", got, want)
	}

	// Removing: by code (the name does not matter), or by name, looked up.
	wantAPISuccess(t, e.request(t, http.MethodDelete, path, url.Values{"emoji_code": {"1f44d"}}, &e.alice))
	wantAPISuccess(t, e.request(t, http.MethodDelete, path, url.Values{"emoji_name": {"octopus"}}, &e.alice))
	wantAPISuccess(t, e.request(t, http.MethodDelete, path, url.Values{"emoji_name": {"zulip"}, "emoji_code": {"zulip"}, "reaction_type": {"zulip_extra_emoji"}}, &e.alice))
	if got := e.reactionsOn(t, &e.alice, id); !jsonEqual(got, want[3:]) {
		t.Errorf("reactions after removing alice's: got %v, want %v", got, want[3:])
	}
}

func TestReactions_ErrorsInZulipsWordsChangeNothing(t *testing.T) {
	e := newTestEnv(t)
	id := e.sendAs(t, e.bob, e.general, "lunch")
	secret, err := e.st.sendMessage(e.alice.user, channelRef{ID: e.secret.ID}, "plans", "shh", "")
	if err != nil {
		t.Fatal(err)
	}
	path := reactionsPath(id)
	wantAPISuccess(t, e.request(t, http.MethodPost, path, url.Values{"emoji_name": {"tada"}}, &e.alice))
	wantAPISuccess(t, e.request(t, http.MethodPost, path, url.Values{"emoji_name": {"thumbs_up"}}, &e.alice))
	state := func() string {
		var list []storedReaction
		mustView(t, e.st, func(tx *bbolt.Tx) error { list = reactionsOf(tx, id); return nil })
		b, _ := json.Marshal(list)
		return string(b)
	}
	before := state()
	for _, c := range []struct {
		rule         string
		method, path string
		params       url.Values
		who          *account
		status       int
		code, msg    string
	}{
		{"emoji_name is required", "POST", path, url.Values{"emoji_code": {"1f389"}}, &e.alice, 400, "REQUEST_VARIABLE_MISSING", "Missing 'emoji_name' argument"},
		{"an unknown name", "POST", path, url.Values{"emoji_name": {"no_such_emoji"}}, &e.alice, 400, "BAD_REQUEST", "Emoji 'no_such_emoji' does not exist"},
		{"a code Zulip does not know", "POST", path, url.Values{"emoji_name": {"smile"}, "emoji_code": {"ffff"}, "reaction_type": {"unicode_emoji"}}, &e.alice, 400, "BAD_REQUEST", "Invalid emoji code."},
		{"a name that is not the code's", "POST", path, url.Values{"emoji_name": {"smile"}, "emoji_code": {"1f419"}, "reaction_type": {"unicode_emoji"}}, &e.alice, 400, "BAD_REQUEST", "Invalid emoji name."},
		{"an unknown type", "POST", path, url.Values{"emoji_name": {"smile"}, "emoji_code": {"1f642"}, "reaction_type": {"sticker"}}, &e.alice, 400, "BAD_REQUEST", "Invalid emoji type."},
		{"no custom emoji exist", "POST", path, url.Values{"emoji_name": {"party"}, "emoji_code": {"1"}, "reaction_type": {"realm_emoji"}}, &e.alice, 400, "BAD_REQUEST", "Invalid custom emoji."},
		{"the same reaction twice", "POST", path, url.Values{"emoji_name": {"tada"}}, &e.alice, 400, "REACTION_ALREADY_EXISTS", "Reaction already exists."},
		{"the same emoji by another name", "POST", path, url.Values{"emoji_name": {"+1"}}, &e.alice, 400, "REACTION_ALREADY_EXISTS", "Reaction already exists."},
		{"a message that does not exist", "POST", reactionsPath(999999), url.Values{"emoji_name": {"tada"}}, &e.alice, 400, "BAD_REQUEST", "Invalid message(s)"},
		{"a message of a channel one cannot read", "POST", reactionsPath(secret.ID), url.Values{"emoji_name": {"tada"}}, &e.bob, 400, "BAD_REQUEST", "Invalid message(s)"},
		{"the message is checked before the emoji", "POST", reactionsPath(999999), url.Values{"emoji_name": {"no_such_emoji"}}, &e.alice, 400, "BAD_REQUEST", "Invalid message(s)"},
		{"an id of no route", "POST", "/api/v1/messages/abc/reactions", url.Values{"emoji_name": {"tada"}}, &e.alice, 404, "BAD_REQUEST", "Not Found"},
		{"removing nothing named", "DELETE", path, nil, &e.alice, 400, "BAD_REQUEST", "At least one of the following arguments must be present: emoji_name, emoji_code"},
		{"removing an unknown name", "DELETE", path, url.Values{"emoji_name": {"no_such_emoji"}}, &e.alice, 400, "BAD_REQUEST", "Emoji 'no_such_emoji' does not exist"},
		{"removing what one did not add", "DELETE", path, url.Values{"emoji_name": {"tada"}}, &e.bob, 400, "REACTION_DOES_NOT_EXIST", "Reaction doesn't exist."},
		{"removing with another type", "DELETE", path, url.Values{"emoji_code": {"1f389"}, "reaction_type": {"realm_emoji"}}, &e.alice, 400, "REACTION_DOES_NOT_EXIST", "Reaction doesn't exist."},
		{"removing from a channel one cannot read", "DELETE", reactionsPath(secret.ID), url.Values{"emoji_name": {"tada"}}, &e.bob, 400, "BAD_REQUEST", "Invalid message(s)"},
	} {
		r := e.request(t, c.method, c.path, c.params, c.who)
		if r.status != c.status || r.body["code"] != c.code || r.body["msg"] != c.msg {
			t.Errorf("%s: got %d %v %q, want %d %s %q", c.rule, r.status, r.body["code"], r.body["msg"], c.status, c.code, c.msg)
		}
		if after := state(); after != before {
			t.Errorf("%s: refused, but the reactions changed from %s to %s", c.rule, before, after)
		}
	}
}

func TestReactions_EventsReachTheChannelsSubscribers(t *testing.T) {
	e := newTestEnv(t)
	id := e.sendAs(t, e.bob, e.general, "lunch")
	alice := e.registerQueue(t, &e.alice, nil).str("queue_id")
	bob := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["reaction"]`}}).str("queue_id")
	owner := e.registerQueue(t, &e.owner, nil).str("queue_id")
	path := reactionsPath(id)
	wantAPISuccess(t, e.request(t, http.MethodPost, path, url.Values{"emoji_name": {"octopus"}}, &e.alice))
	wantAPISuccess(t, e.request(t, http.MethodDelete, path, url.Values{"emoji_name": {"octopus"}}, &e.alice))
	user := map[string]any{"user_id": float64(e.alice.ID), "email": e.alice.Email, "full_name": e.alice.FullName}
	for _, q := range []struct {
		who   *account
		queue string
	}{{&e.alice, alice}, {&e.bob, bob}} {
		events := e.pollNow(t, q.who, q.queue, -1)
		if len(events) != 2 {
			t.Fatalf("%s: got %v, want two reaction events", q.who.Email, events)
		}
		for i, op := range []string{"add", "remove"} {
			want := map[string]any{"type": "reaction", "op": op, "user_id": float64(e.alice.ID), "user": user, "message_id": float64(id),
				"emoji_name": "octopus", "emoji_code": "1f419", "reaction_type": "unicode_emoji", "id": float64(i)}
			if !jsonEqual(events[i], want) {
				t.Errorf("%s event %d: got %v, want %v", q.who.Email, i, events[i], want)
			}
		}
	}
	if events := e.pollNow(t, &e.owner, owner, -1); len(events) != 0 {
		t.Errorf("a non-subscriber heard %v", events)
	}
}

// TestReactions_ReactorsAreTopicParticipants: a reaction makes its user
// one of the topic's participants (for @**topic**), as in Zulip.
func TestReactions_ReactorsAreTopicParticipants(t *testing.T) {
	e := newTestEnv(t)
	id := e.sendAs(t, e.bob, e.general, "lunch")
	name := "tada"
	if err := e.st.addReaction(e.alice.user, id, reactionRequest{Name: &name}); err != nil {
		t.Fatal(err)
	}
	mustView(t, e.st, func(tx *bbolt.Tx) error {
		got := topicParticipants(tx, e.general.ID, "LUNCH", e.owner.ID)
		want := []uint64{e.owner.ID, e.alice.ID, e.bob.ID}
		slices.Sort(want)
		if !jsonEqual(got, want) {
			t.Errorf("participants: got %v, want %v", got, want)
		}
		return nil
	})
}
