package main

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
)

// typingQueue registers a queue for typing events, with the
// capabilities given.
func (e *testEnv) typingQueue(t *testing.T, a *account, capabilities string) string {
	t.Helper()
	return e.registerQueue(t, a, url.Values{"event_types": {`["typing"]`}, "client_capabilities": {capabilities}}).str("queue_id")
}

func TestTyping_ChannelSubscribersWithTheCapabilityHearIt(t *testing.T) {
	e := newTestEnv(t)
	const both = `{"stream_typing_notifications":true,"empty_topic_name":true}`
	bob := e.typingQueue(t, &e.bob, both)
	bobOld := e.typingQueue(t, &e.bob, `{}`) // no stream_typing_notifications
	alice := e.typingQueue(t, &e.alice, `{"stream_typing_notifications":true}`)
	owner := e.typingQueue(t, &e.owner, both) // not subscribed to general

	general := strconv.FormatUint(e.general.ID, 10)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/typing", url.Values{"type": {"channel"}, "op": {"start"}, "stream_id": {general}, "topic": {"lunch"}}, &e.alice))
	got := e.pollNow(t, &e.bob, bob, -1)
	if len(got) != 1 || got[0]["op"] != "start" || got[0]["message_type"] != "stream" || got[0]["stream_id"] != float64(e.general.ID) ||
		got[0]["topic"] != "lunch" || object(got[0]["sender"])["user_id"] != float64(e.alice.ID) || object(got[0]["sender"])["email"] != e.alice.Email {
		t.Errorf("bob, subscribed: got %v, want alice's typing in general > lunch", got)
	}
	if got := e.pollNow(t, &e.alice, alice, -1); len(got) != 1 {
		t.Errorf("alice, subscribed, hears herself as Zulip tells every subscriber: got %v", got)
	}
	if got := e.pollNow(t, &e.bob, bobOld, -1); len(got) != 0 {
		t.Errorf("a queue without stream_typing_notifications: got %v, want nothing", got)
	}
	if got := e.pollNow(t, &e.owner, owner, -1); len(got) != 0 {
		t.Errorf("the owner, not subscribed: got %v, want nothing", got)
	}

	// The empty topic, by its display name for a client without empty_topic_name.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/typing", url.Values{"type": {"stream"}, "op": {"stop"}, "stream_id": {general}, "topic": {"(no topic)"}}, &e.bob))
	if got := e.pollNow(t, &e.alice, alice, 0); len(got) != 1 || got[0]["topic"] != emptyTopicDisplayName || got[0]["op"] != "stop" {
		t.Errorf("empty topic to a client without empty_topic_name: got %v", got)
	}
	if got := e.pollNow(t, &e.bob, bob, 0); len(got) != 1 || got[0]["topic"] != "" {
		t.Errorf("empty topic to a client with empty_topic_name: got %v", got)
	}
}

func TestTyping_DirectParticipantsOnly(t *testing.T) {
	e := newTestEnv(t)
	bob := e.typingQueue(t, &e.bob, `{}`)
	alice := e.typingQueue(t, &e.alice, `{}`)
	owner := e.typingQueue(t, &e.owner, `{}`)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/typing", url.Values{"op": {"start"}, "to": {jsonIDs(e.bob.ID)}}, &e.alice))
	got := e.pollNow(t, &e.bob, bob, -1)
	if len(got) != 1 || got[0]["message_type"] != "direct" || len(got[0]["recipients"].([]any)) != 2 {
		t.Fatalf("bob: got %v, want a direct typing event naming bob and alice", got)
	}
	if got := e.pollNow(t, &e.alice, alice, -1); len(got) != 1 {
		t.Errorf("alice, a participant: got %v", got)
	}
	if got := e.pollNow(t, &e.owner, owner, -1); len(got) != 0 {
		t.Errorf("the owner, no participant: got %v, want nothing", got)
	}
	// Bob turns typing notifications off: he is no longer told.
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"receives_typing_notifications": {"false"}}, &e.bob))
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/typing", url.Values{"op": {"stop"}, "to": {jsonIDs(e.bob.ID)}}, &e.alice))
	if got := e.pollNow(t, &e.bob, bob, 0); len(got) != 0 {
		t.Errorf("bob with receives_typing_notifications off: got %v", got)
	}
}

func TestTyping_Refusals(t *testing.T) {
	e := newTestEnv(t)
	general, secret := strconv.FormatUint(e.general.ID, 10), strconv.FormatUint(e.secret.ID, 10)
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"send_stream_typing_notifications": {"false"}, "send_private_typing_notifications": {"false"}}, &e.admin))
	for _, c := range []struct {
		rule   string
		params url.Values
		who    *account
		code   string
		msg    string
	}{
		{"op is required", url.Values{"to": {jsonIDs(e.bob.ID)}}, &e.alice, "REQUEST_VARIABLE_MISSING", "Missing 'op' argument"},
		{"op is start or stop", url.Values{"op": {"go"}, "to": {jsonIDs(e.bob.ID)}}, &e.alice, "BAD_REQUEST", "Invalid op"},
		{"type is direct, stream or channel", url.Values{"op": {"start"}, "type": {"private"}, "to": {jsonIDs(e.bob.ID)}}, &e.alice, "BAD_REQUEST", "Invalid type"},
		{"to is a list", url.Values{"op": {"start"}, "to": {"7"}}, &e.alice, "BAD_REQUEST", "to is not a list"},
		{"direct needs to", url.Values{"op": {"start"}}, &e.alice, "BAD_REQUEST", "Missing 'to' argument"},
		{"to is not empty", url.Values{"op": {"start"}, "to": {"[]"}}, &e.alice, "BAD_REQUEST", "Empty 'to' list"},
		{"every recipient exists", url.Values{"op": {"start"}, "to": {"[999]"}}, &e.alice, "BAD_REQUEST", "Invalid user ID 999"},
		{"a channel needs stream_id", url.Values{"op": {"start"}, "type": {"channel"}, "topic": {"x"}}, &e.alice, "BAD_REQUEST", "Missing 'stream_id' argument"},
		{"a channel needs a topic", url.Values{"op": {"start"}, "type": {"channel"}, "stream_id": {general}}, &e.alice, "BAD_REQUEST", "Missing topic"},
		{"an unknown channel", url.Values{"op": {"start"}, "type": {"channel"}, "stream_id": {"999"}, "topic": {"x"}}, &e.alice, "BAD_REQUEST", "Invalid channel ID"},
		{"a private channel one is not in", url.Values{"op": {"start"}, "type": {"channel"}, "stream_id": {secret}, "topic": {"x"}}, &e.bob, "BAD_REQUEST", "Invalid channel ID"},
		{"channel typing turned off", url.Values{"op": {"start"}, "type": {"channel"}, "stream_id": {general}, "topic": {"x"}}, &e.admin, "BAD_REQUEST", "User has disabled typing notifications for channel messages"},
		{"direct typing turned off", url.Values{"op": {"start"}, "to": {jsonIDs(e.bob.ID)}}, &e.admin, "BAD_REQUEST", "User has disabled typing notifications for direct messages"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			queue := e.typingQueue(t, &e.bob, `{"stream_typing_notifications":true}`)
			wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/typing", c.params, c.who), http.StatusBadRequest, c.code, c.msg)
			if got := e.pollNow(t, &e.bob, queue, -1); len(got) != 0 {
				t.Errorf("a refused typing notice was told: %v", got)
			}
		})
	}
	// Alice may type in the private channel she is in.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/typing", url.Values{"op": {"start"}, "type": {"channel"}, "stream_id": {secret}, "topic": {"x"}}, &e.alice))
}
