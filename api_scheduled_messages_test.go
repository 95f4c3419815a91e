package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"zulite/internal/zulipexport"
)

// scheduleAt schedules a message and answers its id.
func (e *testEnv) scheduleAt(t *testing.T, a *account, params url.Values) uint64 {
	t.Helper()
	r := e.request(t, http.MethodPost, "/api/v1/scheduled_messages", params, a)
	wantAPISuccess(t, r)
	return uint64(r.body["scheduled_message_id"].(float64))
}

func (e *testEnv) scheduledList(t *testing.T, a *account) []any {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/scheduled_messages", nil, a)
	wantAPISuccess(t, r)
	return asList(r.body["scheduled_messages"])
}

func scheduledPath(id uint64) string {
	return "/api/v1/scheduled_messages/" + strconv.FormatUint(id, 10)
}

// putScheduled stores scheduled messages of a's as they are, past the
// routes' checks (a time already due, more than the bound).
func (e *testEnv) putScheduled(t testing.TB, a account, list ...storedScheduled) {
	t.Helper()
	err := e.st.db.Update(func(tx *bbolt.Tx) error {
		b, due := scheduledBuckets(tx)
		for _, m := range list {
			id, _ := b.NextSequence()
			if err := putJSON(b, userItemKey(a.ID, id), m); err != nil {
				return err
			}
			if err := due.Put(scheduledDueKey(m.Due, id), itob(a.ID)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// channelPost is the parameters of a channel message scheduled at due.
func channelPost(ch channel, topic, content string, due int64) url.Values {
	return url.Values{"type": {"stream"}, "to": {strconv.FormatUint(ch.ID, 10)}, "topic": {topic}, "content": {content},
		"scheduled_delivery_timestamp": {strconv.FormatInt(due, 10)}}
}

// fixedClock sets the store's clock (the scheduler's and the routes')
// and answers a way to move it.
func fixedClock(e *testEnv, at int64) func(int64) {
	now := time.Unix(at, 0)
	e.st.now = func() time.Time { return now }
	return func(to int64) { now = time.Unix(to, 0) }
}

// channelMessages is the contents of the channel's messages, oldest first.
func (e *testEnv) channelMessages(t *testing.T, a *account, ch channel) []string {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/messages", url.Values{"anchor": {"newest"}, "num_before": {"100"}, "num_after": {"0"},
		"narrow": {`[{"operator":"channel","operand":` + strconv.FormatUint(ch.ID, 10) + `}]`}, "apply_markdown": {"false"}}, a)
	wantAPISuccess(t, r)
	var out []string
	for _, m := range asList(r.body["messages"]) {
		out = append(out, m.(map[string]any)["content"].(string))
	}
	return out
}

// TestScheduledMessages_CreateEditDeleteToldToOwnQueuesAndInRegister:
// the four routes store what Zulip stores, in its objects, tell the
// owner's queues (and nobody else's) with Zulip's events, and register
// lists what waits.
func TestScheduledMessages_CreateEditDeleteToldToOwnQueuesAndInRegister(t *testing.T) {
	e := newTestEnv(t)
	const at = 1_800_000_000
	fixedClock(e, at)
	aliceQueue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["scheduled_messages"]`}}).str("queue_id")
	bobQueue := e.registerQueue(t, &e.bob, nil).str("queue_id")

	first := e.scheduleAt(t, &e.alice, channelPost(e.general, " plans ", "see you **soon**", at+60))
	second := e.scheduleAt(t, &e.alice, url.Values{"type": {"direct"}, "to": {"[" + idKey(e.bob) + "," + idKey(e.bob) + "," + idKey(e.alice) + "]"},
		"content": {"hi bob"}, "scheduled_delivery_timestamp": {strconv.Itoa(at + 30)}})
	topic := "plans"
	channelObject := scheduledObject{ID: first, Type: "stream", To: float64(e.general.ID), Topic: &topic, Content: "see you **soon**",
		Rendered: "<p>see you <strong>soon</strong></p>", Due: at + 60}
	directObject := scheduledObject{ID: second, Type: "private", To: []any{float64(e.bob.ID)}, Content: "hi bob", Rendered: "<p>hi bob</p>", Due: at + 30}
	if got, want := e.scheduledList(t, &e.alice), plainJSON([]scheduledObject{directObject, channelObject}); !jsonEqual(got, want) {
		t.Errorf("GET scheduled_messages: got %v, want %v (by time)", got, want)
	}
	if got := e.scheduledList(t, &e.bob); len(got) != 0 {
		t.Errorf("bob sees alice's scheduled messages: %v", got)
	}
	reg := e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {`["scheduled_messages"]`}})
	if !jsonEqual(reg.body["scheduled_messages"], plainJSON([]scheduledObject{directObject, channelObject})) {
		t.Errorf("register's scheduled_messages: got %v", reg.body["scheduled_messages"])
	}

	wantAPISuccess(t, e.request(t, http.MethodPatch, scheduledPath(first), url.Values{"content": {"later"}, "topic": {"moved"},
		"scheduled_delivery_timestamp": {strconv.Itoa(at + 90)}}, &e.alice))
	moved := "moved"
	edited := scheduledObject{ID: first, Type: "stream", To: float64(e.general.ID), Topic: &moved, Content: "later", Rendered: "<p>later</p>", Due: at + 90}
	// A direct message becomes a channel message: a recipient and a topic.
	wantAPISuccess(t, e.request(t, http.MethodPatch, scheduledPath(second), url.Values{"type": {"channel"},
		"to": {strconv.FormatUint(e.general.ID, 10)}, "topic": {"now public"}}, &e.alice))
	public := "now public"
	retyped := scheduledObject{ID: second, Type: "stream", To: float64(e.general.ID), Topic: &public, Content: "hi bob", Rendered: "<p>hi bob</p>", Due: at + 30}
	wantAPISuccess(t, e.request(t, http.MethodDelete, scheduledPath(second), nil, &e.alice))
	if got, want := e.scheduledList(t, &e.alice), plainJSON([]scheduledObject{edited}); !jsonEqual(got, want) {
		t.Errorf("after edit and delete: got %v, want %v", got, want)
	}

	wantEvents := plainJSON([]map[string]any{
		{"type": "scheduled_messages", "op": "add", "scheduled_messages": []scheduledObject{channelObject}, "id": 0},
		{"type": "scheduled_messages", "op": "add", "scheduled_messages": []scheduledObject{directObject}, "id": 1},
		{"type": "scheduled_messages", "op": "update", "scheduled_message": edited, "id": 2},
		{"type": "scheduled_messages", "op": "update", "scheduled_message": retyped, "id": 3},
		{"type": "scheduled_messages", "op": "remove", "scheduled_message_id": second, "id": 4},
	})
	if got := e.pollNow(t, &e.alice, aliceQueue, -1); !jsonEqual(plainJSON(got), wantEvents) {
		t.Errorf("alice's events:\n got %v\nwant %v", got, wantEvents)
	}
	if got := e.pollNow(t, &e.bob, bobQueue, -1); len(got) != 0 {
		t.Errorf("bob heard of alice's scheduled messages: %v", got)
	}
}

// TestScheduledMessages_BadInputRefusedAndChangesNothing: each refusal
// in Zulip's words and code, and afterwards the one scheduled message
// is as it was and no event was told.
func TestScheduledMessages_BadInputRefusedAndChangesNothing(t *testing.T) {
	e := newTestEnv(t)
	const at = 1_800_000_000
	fixedClock(e, at)
	id := e.scheduleAt(t, &e.alice, channelPost(e.general, "t", "kept", at+60))
	queue := e.registerQueue(t, &e.alice, nil).str("queue_id")
	before := e.scheduledList(t, &e.alice)
	general := strconv.FormatUint(e.general.ID, 10)
	post := func(change map[string]string) url.Values {
		v := channelPost(e.general, "t", "c", at+60)
		for k, val := range change {
			if val == "" {
				v.Del(k)
			} else {
				v.Set(k, val)
			}
		}
		return v
	}
	cases := []struct {
		name         string
		method, path string
		params       url.Values
		status       int
		code, msg    string
	}{
		{"content is required", "POST", "/api/v1/scheduled_messages", post(map[string]string{"content": ""}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'content' argument"},
		{"to is JSON", "POST", "/api/v1/scheduled_messages", post(map[string]string{"to": "general"}), 400, "BAD_REQUEST", "to is not valid JSON"},
		{"to is an id or ids", "POST", "/api/v1/scheduled_messages", post(map[string]string{"to": `"general"`}), 400, "BAD_REQUEST", `to["int"] is not an integer`},
		{"type is one of Zulip's", "POST", "/api/v1/scheduled_messages", post(map[string]string{"type": "dm"}), 400, "BAD_REQUEST", "Invalid type"},
		{"the time is required", "POST", "/api/v1/scheduled_messages", post(map[string]string{"scheduled_delivery_timestamp": ""}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'scheduled_delivery_timestamp' argument"},
		{"the time is an integer", "POST", "/api/v1/scheduled_messages", post(map[string]string{"scheduled_delivery_timestamp": "soon"}), 400, "BAD_REQUEST", "scheduled_delivery_timestamp is not valid JSON"},
		{"now is not the future", "POST", "/api/v1/scheduled_messages", post(map[string]string{"scheduled_delivery_timestamp": strconv.Itoa(at)}), 400, "BAD_REQUEST", "Scheduled delivery time must be in the future."},
		{"a channel is one id", "POST", "/api/v1/scheduled_messages", post(map[string]string{"to": "[" + general + "]"}), 400, "BAD_REQUEST", "Invalid data type for channel ID"},
		{"the channel exists", "POST", "/api/v1/scheduled_messages", post(map[string]string{"to": "999"}), 400, "STREAM_DOES_NOT_EXIST", "Channel with ID '999' does not exist"},
		{"a channel message has a topic", "POST", "/api/v1/scheduled_messages", post(map[string]string{"topic": ""}), 400, "BAD_REQUEST", "Missing topic"},
		{"content is not blank", "POST", "/api/v1/scheduled_messages", post(map[string]string{"content": "  "}), 400, "BAD_REQUEST", "Message must not be empty"},
		{"a private channel needs access (bob)", "POST", "/api/v1/scheduled_messages", post(map[string]string{"to": strconv.FormatUint(e.secret.ID, 10)}), 400, "BAD_REQUEST", "Not authorized to send to channel 'secret'"},
		{"direct recipients are a list", "POST", "/api/v1/scheduled_messages", post(map[string]string{"type": "direct", "to": idKey(e.bob)}), 400, "BAD_REQUEST", "Invalid data type for recipients"},
		{"direct recipients exist", "POST", "/api/v1/scheduled_messages", post(map[string]string{"type": "direct", "to": "[999]"}), 400, "BAD_REQUEST", "Invalid user ID 999"},
		{"an edit changes something", "PATCH", scheduledPath(id), nil, 400, "BAD_REQUEST", "Nothing to change"},
		{"a new type needs a recipient", "PATCH", scheduledPath(id), url.Values{"type": {"direct"}}, 400, "BAD_REQUEST", "Recipient required when updating type of scheduled message."},
		{"a new channel type needs a topic", "PATCH", scheduledPath(id), url.Values{"type": {"stream"}, "to": {general}}, 400, "BAD_REQUEST", "Topic required when updating scheduled message type to channel."},
		{"an edit's time is in the future", "PATCH", scheduledPath(id), url.Values{"scheduled_delivery_timestamp": {strconv.Itoa(at - 1)}}, 400, "BAD_REQUEST", "Scheduled delivery time must be in the future."},
		{"an edit's content is checked", "PATCH", scheduledPath(id), url.Values{"content": {""}}, 400, "BAD_REQUEST", "Message must not be empty"},
		{"an edit's recipient is checked", "PATCH", scheduledPath(id), url.Values{"to": {"999"}}, 400, "STREAM_DOES_NOT_EXIST", "Channel with ID '999' does not exist"},
		{"an unknown id", "PATCH", scheduledPath(id + 1), url.Values{"content": {"x"}}, 404, "BAD_REQUEST", "Scheduled message does not exist"},
		{"an id past any", "DELETE", "/api/v1/scheduled_messages/99999999999999999999", nil, 404, "BAD_REQUEST", "Scheduled message does not exist"},
		{"another's id", "DELETE", scheduledPath(id), nil, 404, "BAD_REQUEST", "Scheduled message does not exist"},
	}
	for _, c := range cases {
		creds := &e.alice
		if c.name == "another's id" || c.name == "a private channel needs access (bob)" {
			creds = &e.bob
		}
		r := e.request(t, c.method, c.path, c.params, creds)
		if r.status != c.status || r.str("code") != c.code || r.str("msg") != c.msg {
			t.Errorf("%s: got %d %s %q, want %d %s %q", c.name, r.status, r.str("code"), r.str("msg"), c.status, c.code, c.msg)
		}
	}
	if after := e.scheduledList(t, &e.alice); !jsonEqual(after, before) {
		t.Errorf("after refusals: got %v, want %v", after, before)
	}
	if got := e.pollNow(t, &e.alice, queue, -1); len(got) != 0 {
		t.Errorf("refusals told events: %v", got)
	}
}

// TestScheduledMessages_PerUserBoundRefused: past maxScheduledPerUser a
// new one is refused, and nothing is stored.
func TestScheduledMessages_PerUserBoundRefused(t *testing.T) {
	e := newTestEnv(t)
	const at = 1_800_000_000
	fixedClock(e, at)
	list := make([]storedScheduled, maxScheduledPerUser)
	for i := range list {
		list[i] = storedScheduled{Type: "stream", ChannelID: e.general.ID, Topic: "t", Content: "c", Due: at + 100 + int64(i)}
	}
	e.putScheduled(t, e.alice, list...)
	r := e.request(t, http.MethodPost, "/api/v1/scheduled_messages", channelPost(e.general, "t", "one more", at+60), &e.alice)
	wantAPIError(t, r, 400, "BAD_REQUEST", "You may have at most 1000 scheduled messages.")
	if got := len(e.scheduledList(t, &e.alice)); got != maxScheduledPerUser {
		t.Errorf("scheduled: got %d, want %d", got, maxScheduledPerUser)
	}
	e.scheduleAt(t, &e.bob, channelPost(e.general, "t", "bob's own", at+60)) // the bound is per user
}

// TestScheduledMessages_SentAtItsTimeOnceThroughTheSendPath: nothing is
// sent before its second; at it the message is sent as a send is (in
// the channel, unread for the others, a message event to them), the
// scheduled message goes (a remove event), and another pass sends
// nothing again.
func TestScheduledMessages_SentAtItsTimeOnceThroughTheSendPath(t *testing.T) {
	e := newTestEnv(t)
	const at = 1_800_000_000
	setNow := fixedClock(e, at)
	id := e.scheduleAt(t, &e.alice, channelPost(e.general, "standup", "good morning @**"+e.bob.FullName+"**", at+60))
	direct := e.scheduleAt(t, &e.alice, url.Values{"type": {"direct"}, "to": {"[" + idKey(e.bob) + "]"}, "content": {"psst"},
		"scheduled_delivery_timestamp": {strconv.Itoa(at + 61)}})
	aliceQueue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["scheduled_messages"]`}}).str("queue_id")
	bobQueue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["message"]`}}).str("queue_id")

	setNow(at + 59)
	if wait := e.server.scheduler.deliverDue(); wait != time.Second {
		t.Errorf("a second early: sleeps %v, want 1s", wait)
	}
	if got := e.channelMessages(t, &e.bob, e.general); len(got) != 0 {
		t.Fatalf("sent early: %v", got)
	}
	setNow(at + 60)
	e.server.scheduler.deliverDue()
	setNow(at + 61)
	e.server.scheduler.deliverDue()
	e.server.scheduler.deliverDue()
	if got := e.channelMessages(t, &e.bob, e.general); len(got) != 1 || got[0] != "good morning @**"+e.bob.FullName+"**" {
		t.Fatalf("bob's channel: got %q, want the message once", got)
	}
	if got := e.scheduledList(t, &e.alice); len(got) != 0 {
		t.Errorf("still scheduled after sending: %v", got)
	}
	events := e.pollNow(t, &e.bob, bobQueue, -1)
	if len(events) != 2 {
		t.Fatalf("bob's events: got %v, want the two messages", events)
	}
	sent := events[0]["message"].(map[string]any)
	if sent["timestamp"] != float64(at+60) || sent["sender_id"] != float64(e.alice.ID) || !jsonEqual(events[0]["flags"], []any{"mentioned"}) {
		t.Errorf("bob's message event: got %v, want alice's at %d, unread and mentioning him", events[0], at+60)
	}
	if m := events[1]["message"].(map[string]any); m["content"] != "psst" || m["type"] != "private" {
		t.Errorf("bob's direct message: got %v", m)
	}
	removed := e.pollNow(t, &e.alice, aliceQueue, -1)
	want := plainJSON([]map[string]any{{"type": "scheduled_messages", "op": "remove", "scheduled_message_id": id, "id": 0},
		{"type": "scheduled_messages", "op": "remove", "scheduled_message_id": direct, "id": 1}})
	if !jsonEqual(plainJSON(removed), want) {
		t.Errorf("alice's events: got %v, want %v", removed, want)
	}
	if unread, _ := e.st.unread(e.bob.ID, e.general.ID); len(unread) != 1 {
		t.Errorf("bob's unread in general: got %v, want the sent message", unread)
	}
}

// TestScheduledMessages_FailedSendMarkedKeptAndRetriedOnEdit: a send the
// sender may no longer make (she left the private channel) marks the
// message failed, keeps it and tells her (failed: true); an edit must
// give a new time, and then it is sent. A message reached past Zulip's
// ten-minute cutoff fails too.
func TestScheduledMessages_FailedSendMarkedKeptAndRetriedOnEdit(t *testing.T) {
	e := newTestEnv(t)
	const at = 1_800_000_000
	setNow := fixedClock(e, at)
	id := e.scheduleAt(t, &e.alice, channelPost(e.secret, "t", "secret plan", at+60))
	late := e.scheduleAt(t, &e.alice, channelPost(e.general, "t", "too late", at+30))
	queue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["scheduled_messages"]`}}).str("queue_id")
	if _, _, _, _, err := e.st.unsubscribe(e.alice.user, []string{"secret"}); err != nil {
		t.Fatal(err)
	}
	setNow(at + 30 + scheduledLateCutoff + 1)
	e.server.scheduler.deliverDue()
	got := e.scheduledList(t, &e.alice)
	if len(got) != 2 || got[0].(map[string]any)["failed"] != true || got[1].(map[string]any)["failed"] != true {
		t.Fatalf("after failed sends: got %v, want both kept, failed", got)
	}
	events := e.pollNow(t, &e.alice, queue, -1)
	if len(events) != 2 || events[0]["op"] != "update" || events[0]["scheduled_message"].(map[string]any)["failed"] != true {
		t.Errorf("alice's events: got %v, want an update with failed true for each", events)
	}
	var why []string
	e.st.view(func(tx *bbolt.Tx) error {
		for _, i := range []uint64{late, id} {
			m, _ := scheduledOf(tx, e.alice.ID, i)
			why = append(why, m.FailureMessage)
		}
		return nil
	})
	if why[0] != "Message could not be sent at the scheduled time." || why[1] != "Not authorized to send to channel 'secret'" {
		t.Errorf("failure messages: got %q", why)
	}
	if got := e.channelMessages(t, &e.owner, e.secret); len(got) != 0 {
		t.Errorf("sent although failed: %v", got)
	}

	r := e.request(t, http.MethodPatch, scheduledPath(late), url.Values{"content": {"again"}}, &e.alice)
	wantAPIError(t, r, 400, "BAD_REQUEST", "Scheduled delivery time must be in the future.")
	now := int64(at + 30 + scheduledLateCutoff + 1)
	wantAPISuccess(t, e.request(t, http.MethodPatch, scheduledPath(late), url.Values{"scheduled_delivery_timestamp": {strconv.FormatInt(now+5, 10)}}, &e.alice))
	if got := e.scheduledList(t, &e.alice); got[1].(map[string]any)["failed"] != false {
		t.Errorf("after a new time: got %v, want it pending again", got[1])
	}
	setNow(now + 5)
	e.server.scheduler.deliverDue()
	if got := e.channelMessages(t, &e.bob, e.general); len(got) != 1 || got[0] != "too late" {
		t.Errorf("after the new time: got %q, want it sent", got)
	}
}

// TestScheduledMessages_DeactivatedSenderFailsUntold: Zulip fails a
// deactivated user's message without telling anyone.
func TestScheduledMessages_DeactivatedSenderFailsUntold(t *testing.T) {
	e := newTestEnv(t)
	const at = 1_800_000_000
	setNow := fixedClock(e, at)
	id := e.scheduleAt(t, &e.alice, channelPost(e.general, "t", "from the past", at+60))
	if err := e.st.setActive(e.alice.Email, false); err != nil {
		t.Fatal(err)
	}
	setNow(at + 60)
	e.server.scheduler.deliverDue()
	var m storedScheduled
	e.st.view(func(tx *bbolt.Tx) error { m, _ = scheduledOf(tx, e.alice.ID, id); return nil })
	if !m.Failed || m.FailureMessage != "Account is deactivated." {
		t.Errorf("got %+v, want failed, the account deactivated", m)
	}
	if got := e.channelMessages(t, &e.bob, e.general); len(got) != 0 {
		t.Errorf("sent for a deactivated sender: %v", got)
	}
}

// TestExport_ScheduledMessagesGoOverAsZulipImportsThem: a channel
// message, a one-to-one, one to oneself and one to a group that has a
// conversation go into zerver_scheduledmessage under the recipients
// Zulip's import remaps; one to a group with no message yet, which has
// no recipient in the export, is counted as left out.
func TestExport_ScheduledMessagesGoOverAsZulipImportsThem(t *testing.T) {
	e := newTestEnv(t)
	exportActivity(t, e) // alice wrote to bob and the owner: a group
	due := e.st.now().Unix() + 3600
	e.putScheduled(t, e.alice,
		storedScheduled{Type: "stream", ChannelID: e.general.ID, Topic: "later", Content: "a", Rendered: "<p>a</p>", Due: due, Client: "ZulipFlutter"},
		storedScheduled{Type: "private", Recipients: []uint64{e.bob.ID}, Content: "b", Rendered: "<p>b</p>", Due: due},
		storedScheduled{Type: "private", Recipients: []uint64{e.alice.ID}, Content: "c", Rendered: "<p>c</p>", Due: due, Failed: true, FailureMessage: "x"},
		storedScheduled{Type: "private", Recipients: []uint64{e.bob.ID, e.owner.ID}, Content: "d", Rendered: "<p>d</p>", Due: due},
		storedScheduled{Type: "private", Recipients: []uint64{e.bob.ID, e.admin.ID}, Content: "e", Rendered: "<p>e</p>", Due: due},
		storedScheduled{Type: "private", Recipients: []uint64{e.alice.ID}, Content: "r", Rendered: "<p>r</p>", Due: due, Target: 1})
	dir := filepath.Join(t.TempDir(), "export")
	if err := prepareExportDir(dir); err != nil {
		t.Fatal(err)
	}
	report, err := e.st.export(dir, e.st.uploadsDir())
	if err != nil {
		t.Fatal(err)
	}
	checkZulipImportable(t, dir)
	var realm map[string]any
	readJSONFile(t, filepath.Join(dir, "realm.json"), &realm)
	recipients, types := map[string]float64{}, map[string]float64{}
	for _, r := range asList(realm["zerver_scheduledmessage"]) {
		row := object(r)
		recipients[row["content"].(string)] = row["recipient"].(float64)
		types[row["content"].(string)] = row["delivery_type"].(float64)
	}
	conv, _ := conversationOfIDs(e.st, e.alice.ID, e.bob.ID, e.owner.ID)
	want := map[string]float64{
		"a": float64(recipientID(recipientChannel, e.general.ID)),
		"b": float64(recipientID(zulipexport.RecipientPersonal, e.bob.ID)),
		"c": float64(recipientID(zulipexport.RecipientPersonal, e.alice.ID)),
		"d": float64(recipientID(zulipexport.RecipientHuddle, conv)),
		"r": float64(recipientID(zulipexport.RecipientPersonal, e.alice.ID)),
	}
	if !jsonEqual(recipients, want) {
		t.Errorf("zerver_scheduledmessage recipients: got %v, want %v", recipients, want)
	}
	if wantTypes := map[string]float64{"a": 1, "b": 1, "c": 1, "d": 1, "r": 2}; !jsonEqual(types, wantTypes) { // a reminder is REMIND
		t.Errorf("zerver_scheduledmessage delivery types: got %v, want %v", types, wantTypes)
	}
	if report.Scheduled != 5 || report.ScheduledLeftOut != 1 || !strings.Contains(report.String(), "scheduled messages: 5 exported, 1 not") {
		t.Errorf("report: got %d exported, %d left out: %s", report.Scheduled, report.ScheduledLeftOut, report)
	}
}

func conversationOfIDs(st *store, ids ...uint64) (uint64, bool) {
	var conv uint64
	var ok bool
	slices.Sort(ids)
	st.view(func(tx *bbolt.Tx) error { conv, ok = conversationOf(tx, ids); return nil })
	return conv, ok
}

// TestScheduledMessages_RandomSchedulesEachSentOnceAtOrAfterItsTime is a
// property over random runs of schedule, edit, delete and scheduler
// passes with the clock moving on: every message that was not deleted is
// sent exactly once, at the first pass at or after its (last) time, with
// its last content; a deleted one never; a pass sends nothing early.
func TestScheduledMessages_RandomSchedulesEachSentOnceAtOrAfterItsTime(t *testing.T) {
	for seed := range uint64(4) {
		e := newTestEnv(t)
		rng := rand.New(rand.NewPCG(seed, 32))
		now := int64(1_800_000_000)
		setNow := fixedClock(e, now)
		type model struct {
			content string
			due     int64
			deleted bool
			sentAt  int64 // clock of the pass that sent it; 0: not yet
		}
		var ids []uint64
		byID := map[uint64]*model{}
		contents := map[string]uint64{}
		for step := range 120 {
			switch op := rng.IntN(6); {
			case op <= 1 || len(ids) == 0:
				content := fmt.Sprintf("s%d-%d", seed, step)
				due := now + 1 + rng.Int64N(20)
				id := e.scheduleAt(t, &e.alice, channelPost(e.general, "p", content, due))
				ids, byID[id], contents[content] = append(ids, id), &model{content: content, due: due}, id
			case op == 2:
				id := ids[rng.IntN(len(ids))]
				m := byID[id]
				content, due := fmt.Sprintf("s%d-%d-edited", seed, step), now+1+rng.Int64N(20)
				r := e.request(t, http.MethodPatch, scheduledPath(id), url.Values{"content": {content}, "scheduled_delivery_timestamp": {strconv.FormatInt(due, 10)}}, &e.alice)
				if m.deleted || m.sentAt != 0 {
					wantAPIError(t, r, 404, "BAD_REQUEST", "Scheduled message does not exist")
					continue
				}
				wantAPISuccess(t, r)
				delete(contents, m.content)
				m.content, m.due, contents[content] = content, due, id
			case op == 3:
				id := ids[rng.IntN(len(ids))]
				m := byID[id]
				r := e.request(t, http.MethodDelete, scheduledPath(id), nil, &e.alice)
				if m.deleted || m.sentAt != 0 {
					wantAPIError(t, r, 404, "BAD_REQUEST", "Scheduled message does not exist")
					continue
				}
				wantAPISuccess(t, r)
				m.deleted = true
			default:
				now += rng.Int64N(6)
				setNow(now)
				e.server.scheduler.deliverDue()
				for _, m := range byID {
					if !m.deleted && m.sentAt == 0 && m.due <= now {
						m.sentAt = now
					}
				}
			}
		}
		now += 30
		setNow(now)
		e.server.scheduler.deliverDue()
		for _, m := range byID {
			if !m.deleted && m.sentAt == 0 {
				m.sentAt = now
			}
		}
		sent := map[string]int64{}
		counts := map[string]int{}
		e.st.view(func(tx *bbolt.Tx) error {
			return tx.Bucket(bucketMessages).ForEach(func(_, v []byte) error {
				var m message
				json.Unmarshal(v, &m)
				sent[m.Content], counts[m.Content] = m.Timestamp, counts[m.Content]+1
				return nil
			})
		})
		for id, m := range byID {
			switch {
			case m.deleted && counts[m.content] != 0:
				t.Errorf("seed %d: deleted %d (%q) was sent", seed, id, m.content)
			case !m.deleted && (counts[m.content] != 1 || sent[m.content] != m.sentAt):
				t.Errorf("seed %d: %d (%q, due %d): sent %d times, at %d; want once, at %d", seed, id, m.content, m.due, counts[m.content], sent[m.content], m.sentAt)
			}
		}
		if got := e.scheduledList(t, &e.alice); len(got) != 0 {
			t.Errorf("seed %d: still scheduled at the end: %v", seed, got)
		}
	}
}
