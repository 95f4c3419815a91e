package main

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
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

// editTypingQueue registers a queue for typing_edit_message events.
func (e *testEnv) editTypingQueue(t *testing.T, a *account, capabilities string) string {
	t.Helper()
	return e.registerQueue(t, a, url.Values{"event_types": {`["typing_edit_message"]`}, "client_capabilities": {capabilities}}).str("queue_id")
}

func TestEditTyping_ChannelSubscribersAndDirectParticipantsHearIt(t *testing.T) {
	e := newTestEnv(t)
	bob := e.editTypingQueue(t, &e.bob, `{}`) // no capability is needed
	bobNew := e.editTypingQueue(t, &e.bob, `{"empty_topic_name":true}`)
	owner := e.editTypingQueue(t, &e.owner, `{}`) // not in general, not in the conversation
	id := e.sendAs(t, e.alice, e.general, "lunch")
	path := "/api/v1/messages/" + strconv.FormatUint(id, 10) + "/typing"
	wantAPISuccess(t, e.request(t, http.MethodPost, path, url.Values{"op": {"start"}}, &e.alice))
	got := e.pollNow(t, &e.bob, bob, -1)
	if len(got) != 1 || got[0]["type"] != "typing_edit_message" || got[0]["op"] != "start" || got[0]["sender_id"] != float64(e.alice.ID) || got[0]["message_id"] != float64(id) {
		t.Fatalf("bob, subscribed: got %v, want alice's typing_edit_message start", got)
	}
	if r := object(got[0]["recipient"]); r["type"] != "channel" || r["channel_id"] != float64(e.general.ID) || r["topic"] != "lunch" {
		t.Errorf("recipient: got %v, want general > lunch", r)
	}
	if got := e.pollNow(t, &e.owner, owner, -1); len(got) != 0 {
		t.Errorf("the owner, not subscribed: got %v, want nothing", got)
	}
	// The empty topic by its display name to a client without empty_topic_name.
	empty := e.sendAs(t, e.alice, e.general, "")
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/"+strconv.FormatUint(empty, 10)+"/typing", url.Values{"op": {"stop"}}, &e.alice))
	if got := e.pollNow(t, &e.bob, bob, 0); len(got) != 1 || object(got[0]["recipient"])["topic"] != emptyTopicDisplayName || got[0]["op"] != "stop" {
		t.Errorf("the empty topic, old client: got %v", got)
	}
	if got := e.pollNow(t, &e.bob, bobNew, 0); len(got) != 1 || object(got[0]["recipient"])["topic"] != "" {
		t.Errorf("the empty topic, empty_topic_name: got %v", got)
	}

	dm := e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "lunch")
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/"+strconv.FormatUint(dm, 10)+"/typing", url.Values{"op": {"start"}}, &e.alice))
	got = e.pollNow(t, &e.bob, bob, 1)
	if len(got) != 1 || object(got[0]["recipient"])["type"] != "direct" || len(object(got[0]["recipient"])["user_ids"].([]any)) != 2 {
		t.Errorf("bob, a participant: got %v, want a direct recipient naming alice and bob", got)
	}
	if got := e.pollNow(t, &e.owner, owner, -1); len(got) != 0 {
		t.Errorf("the owner, no participant: got %v, want nothing", got)
	}
	// Bob turns typing notifications off: he is neither told nor named.
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"receives_typing_notifications": {"false"}}, &e.bob))
	alice := e.editTypingQueue(t, &e.alice, `{}`)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/"+strconv.FormatUint(dm, 10)+"/typing", url.Values{"op": {"stop"}}, &e.alice))
	if got := e.pollNow(t, &e.bob, bob, 2); len(got) != 0 {
		t.Errorf("bob with receives_typing_notifications off: got %v", got)
	}
	if got := e.pollNow(t, &e.alice, alice, -1); len(got) != 1 || len(object(got[0]["recipient"])["user_ids"].([]any)) != 1 {
		t.Errorf("alice: got %v, want user_ids of those told only", got)
	}
}

func TestEditTyping_Refusals(t *testing.T) {
	e := newTestEnv(t)
	start := time.Now()
	e.st.now = func() time.Time { return start }
	bobs := strconv.FormatUint(e.sendAs(t, e.bob, e.general, "lunch"), 10)
	secret := strconv.FormatUint(e.sendAs(t, e.alice, e.secret, "lunch"), 10)
	old := strconv.FormatUint(e.sendAs(t, e.alice, e.general, "old"), 10)
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"send_stream_typing_notifications": {"false"}, "send_private_typing_notifications": {"false"}}, &e.admin))
	e.st.now = func() time.Time { return start.Add(defaultMessageLimitSeconds*time.Second + time.Second) }
	fresh := strconv.FormatUint(e.sendAs(t, e.alice, e.general, "fresh"), 10)
	adminChannel := strconv.FormatUint(e.sendAs(t, e.admin, e.general, "lunch"), 10)
	adminDM := strconv.FormatUint(e.sendDM(t, &e.admin, jsonIDs(e.bob.ID), "lunch"), 10)
	for _, c := range []struct {
		rule, id string
		params   url.Values
		who      *account
		code     string
		msg      string
	}{
		{"op is required", "1", nil, &e.alice, "REQUEST_VARIABLE_MISSING", "Missing 'op' argument"},
		{"op is start or stop", fresh, url.Values{"op": {"go"}}, &e.alice, "BAD_REQUEST", "Invalid op"},
		{"an unknown message", "999999", url.Values{"op": {"start"}}, &e.alice, "BAD_REQUEST", "Invalid message(s)"},
		{"a message one cannot read", secret, url.Values{"op": {"start"}}, &e.bob, "BAD_REQUEST", "Invalid message(s)"},
		{"someone else's message", bobs, url.Values{"op": {"start"}}, &e.alice, "BAD_REQUEST", "You don't have permission to edit this message"},
		{"past the edit limit, with no buffer", old, url.Values{"op": {"start"}}, &e.alice, "BAD_REQUEST", "The time limit for editing this message has passed"},
		{"channel typing turned off", adminChannel, url.Values{"op": {"start"}}, &e.admin, "BAD_REQUEST", "User has disabled typing notifications for channel messages"},
		{"direct typing turned off", adminDM, url.Values{"op": {"start"}}, &e.admin, "BAD_REQUEST", "User has disabled typing notifications for direct messages"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			queue := e.editTypingQueue(t, &e.bob, `{}`)
			wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/messages/"+c.id+"/typing", c.params, c.who), http.StatusBadRequest, c.code, c.msg)
			if got := e.pollNow(t, &e.bob, queue, -1); len(got) != 0 {
				t.Errorf("a refused edit typing notice was told: %v", got)
			}
		})
	}
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/"+fresh+"/typing", url.Values{"op": {"start"}}, &e.alice))
}
