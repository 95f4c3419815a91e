package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// checkMessageIndexes checks that channel_messages and topic_messages
// hold exactly the stored messages, each under its channel and topic.
func checkMessageIndexes(t testing.TB, tx *bbolt.Tx) {
	t.Helper()
	want := 0
	tx.Bucket(bucketMessages).ForEach(func(k, _ []byte) error {
		m, err := messageByID(tx, btoi(k))
		if err != nil {
			t.Errorf("message %d: %v", btoi(k), err)
			return nil
		}
		want++
		if tx.Bucket(bucketChannelMessages).Get(append(itob(m.ChannelID), k...)) == nil || tx.Bucket(bucketTopicMessages).Get(topicKey(m.ChannelID, m.Topic, m.ID)) == nil {
			t.Errorf("message %d is stored without its index entries", m.ID)
		}
		return nil
	})
	for _, b := range [][]byte{bucketChannelMessages, bucketTopicMessages} {
		n := 0
		tx.Bucket(b).ForEach(func(k, _ []byte) error {
			n++
			id := btoi(k[len(k)-8:])
			m, err := messageByID(tx, id)
			switch {
			case err != nil:
				t.Errorf("%s indexes message %d, which is not stored", b, id)
			case btoi(k[:8]) != m.ChannelID:
				t.Errorf("%s indexes message %d under channel %d; it is in %d", b, id, btoi(k[:8]), m.ChannelID)
			case string(b) == string(bucketTopicMessages) && string(k) != string(topicKey(m.ChannelID, m.Topic, m.ID)):
				t.Errorf("topic_messages indexes message %d under another topic than %q", id, m.Topic)
			}
			return nil
		})
		if n != want {
			t.Errorf("%s holds %d entries for %d messages", b, n, want)
		}
	}
}

func (e *testEnv) checkIndexes(t *testing.T) {
	t.Helper()
	mustView(t, e.st, func(tx *bbolt.Tx) error { checkMessageIndexes(t, tx); return nil })
}

func msgPath(id uint64) string { return "/api/v1/messages/" + strconv.FormatUint(id, 10) }

func (e *testEnv) storedMessage(t *testing.T, id uint64) (message, bool) {
	t.Helper()
	var m message
	var found bool
	mustView(t, e.st, func(tx *bbolt.Tx) error {
		var err error
		m, err = messageByID(tx, id)
		found = err == nil
		return nil
	})
	return m, found
}

// eventsOfType polls a queue and keeps the events of one type.
func (e *testEnv) eventsOfType(t *testing.T, a *account, queueID, kind string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ev := range e.pollNow(t, a, queueID, -1) {
		if ev["type"] == kind {
			out = append(out, ev)
		}
	}
	return out
}

func TestEditMessage_RefusalsChangeNothing(t *testing.T) {
	e := newTestEnv(t)
	start := time.Now()
	e.st.now = func() time.Time { return start }
	own := e.sendAs(t, e.alice, e.general, "lunch")
	secretMsg := e.sendAs(t, e.alice, e.secret, "plans")
	sum := sha256.Sum256([]byte("hi"))
	general := strconv.FormatUint(e.general.ID, 10)
	cases := []struct {
		name   string
		as     account
		id     uint64
		params url.Values
		after  time.Duration // since the send
		status int
		code   string
		msg    string
	}{
		{"someone else's content", e.bob, own, url.Values{"content": {"mine"}}, 0, 400, "BAD_REQUEST", "You don't have permission to edit this message"},
		{"an administrator's too", e.admin, own, url.Values{"content": {"mine"}}, 0, 400, "BAD_REQUEST", "You don't have permission to edit this message"},
		{"nothing to change", e.alice, own, nil, 0, 400, "BAD_REQUEST", "Nothing to change"},
		{"the same topic is no change", e.alice, own, url.Values{"topic": {" lunch "}}, 0, 400, "BAD_REQUEST", "Nothing to change"},
		{"propagate without a move", e.alice, own, url.Values{"content": {"x"}, "propagate_mode": {"change_all"}}, 0, 400, "BAD_REQUEST", "Invalid propagate_mode without topic edit"},
		{"unknown propagate mode", e.alice, own, url.Values{"topic": {"x"}, "propagate_mode": {"change_some"}}, 0, 400, "BAD_REQUEST", "Invalid propagate_mode: Input should be 'change_later', 'change_one' or 'change_all'"},
		{"content while moving", e.alice, own, url.Values{"content": {"x"}, "stream_id": {strconv.FormatUint(e.secret.ID, 10)}}, 0, 400, "BAD_REQUEST", "Cannot change message content while changing channel"},
		{"resolving general chat", e.alice, own, url.Values{"topic": {"✔"}}, 0, 400, "BAD_REQUEST", "General chat cannot be marked as resolved"},
		{"no such message", e.alice, 999999, url.Values{"content": {"x"}}, 0, 400, "BAD_REQUEST", "Invalid message(s)"},
		{"a message bob cannot read", e.bob, secretMsg, url.Values{"topic": {"x"}}, 0, 400, "BAD_REQUEST", "Invalid message(s)"},
		{"a channel bob cannot read", e.bob, own, url.Values{"stream_id": {strconv.FormatUint(e.secret.ID, 10)}}, 0, 400, "BAD_REQUEST", "Invalid channel ID"},
		{"a channel that is not", e.alice, own, url.Values{"stream_id": {"999999"}}, 0, 400, "BAD_REQUEST", "Invalid channel ID"},
		{"a bad channel id", e.alice, own, url.Values{"stream_id": {"x"}}, 0, 400, "BAD_REQUEST", "stream_id is not valid JSON"},
		{"content after ten minutes", e.alice, own, url.Values{"content": {"late"}}, 621 * time.Second, 400, "BAD_REQUEST", "The time limit for editing this message has passed"},
		{"topic after a week", e.bob, own, url.Values{"topic": {"late"}}, 8 * 24 * time.Hour, 400, "BAD_REQUEST", "The time limit for editing this message's topic has passed."},
		{"channel after a week", e.bob, own, url.Values{"stream_id": {general}, "topic": {"x"}}, 8 * 24 * time.Hour, 400, "BAD_REQUEST", "The time limit for editing this message's topic has passed."},
		{"stale content", e.alice, own, url.Values{"content": {"x"}, "prev_content_sha256": {hex.EncodeToString(sum[:1])}}, 0, 400, "EXPECTATION_MISMATCH", "'prev_content_sha256' value does not match the expected value."},
		{"deleting someone else's", e.bob, own, nil, 0, 400, "BAD_REQUEST", "You don't have permission to delete this message"},
		{"deleting after ten minutes", e.alice, own, nil, 601 * time.Second, 400, "BAD_REQUEST", "The time limit for deleting this message has passed"},
		{"deleting what bob cannot read", e.bob, secretMsg, nil, 0, 400, "BAD_REQUEST", "Invalid message(s)"},
	}
	before, _ := e.storedMessage(t, own)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.st.now = func() time.Time { return start.Add(c.after) }
			method := http.MethodPatch
			if c.params == nil && c.name != "nothing to change" {
				method = http.MethodDelete
			}
			wantAPIError(t, e.request(t, method, msgPath(c.id), c.params, &c.as), c.status, c.code, c.msg)
			if after, found := e.storedMessage(t, own); !found || fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("got %+v after the refusal, want %+v", after, before)
			}
		})
	}
	e.checkIndexes(t)
}

func TestEditMessage_PermissionsFollowTheRealmAndTheLimits(t *testing.T) {
	e := newTestEnv(t)
	start := time.Now()
	e.st.now = func() time.Time { return start }
	id := e.sendAs(t, e.alice, e.general, "lunch")
	// Anyone moves between topics by default; nobody once the realm says so.
	wantAPISuccess(t, e.request(t, "PATCH", msgPath(id), url.Values{"topic": {"dinner"}}, &e.bob))
	wantAPISuccess(t, e.request(t, "PATCH", "/api/v1/realm", url.Values{"can_move_messages_between_topics_group": {`{"new":8}`}}, &e.admin))
	wantAPIError(t, e.request(t, "PATCH", msgPath(id), url.Values{"topic": {"supper"}}, &e.bob), 400, "BAD_REQUEST", "You don't have permission to edit this message")
	// Resolving is its own permission.
	wantAPISuccess(t, e.request(t, "PATCH", msgPath(id), url.Values{"topic": {"✔ dinner"}}, &e.bob))
	wantAPISuccess(t, e.request(t, "PATCH", "/api/v1/realm", url.Values{"can_resolve_topics_group": {`{"new":8}`}}, &e.admin))
	wantAPIError(t, e.request(t, "PATCH", msgPath(id), url.Values{"topic": {"dinner"}}, &e.bob), 400, "BAD_REQUEST", "You don't have permission to resolve topics in this channel.")
	// Administrators move anything, past the limits.
	e.st.now = func() time.Time { return start.Add(30 * 24 * time.Hour) }
	wantAPISuccess(t, e.request(t, "PATCH", msgPath(id), url.Values{"topic": {"archive"}}, &e.admin))
	wantAPIError(t, e.request(t, "PATCH", msgPath(id), url.Values{"content": {"late"}}, &e.alice), 400, "BAD_REQUEST", "The time limit for editing this message has passed")
	// Members move between channels, unless the realm says otherwise.
	e.st.now = func() time.Time { return start }
	other := mustCreateChannel(t, e.st, "other", false)
	wantAPISuccess(t, e.request(t, "PATCH", "/api/v1/realm", url.Values{"can_move_messages_between_channels_group": {`{"new":8}`}}, &e.admin))
	wantAPIError(t, e.request(t, "PATCH", msgPath(id), url.Values{"stream_id": {strconv.FormatUint(other.ID, 10)}}, &e.bob), 400, "BAD_REQUEST", "You don't have permission to move this message")
	// change_all past the limit names what may move.
	e.st.now = func() time.Time { return start.Add(8 * 24 * time.Hour) }
	young := e.sendAs(t, e.alice, e.general, "archive")
	wantAPISuccess(t, e.request(t, "PATCH", "/api/v1/realm", url.Values{"can_move_messages_between_topics_group": {`{"new":6}`}}, &e.admin))
	r := e.request(t, "PATCH", msgPath(young), url.Values{"topic": {"x"}, "propagate_mode": {"change_all"}}, &e.bob)
	wantAPIError(t, r, 400, "MOVE_MESSAGES_TIME_LIMIT_EXCEEDED", "You only have permission to move the 1/2 most recent messages in this topic.")
	if r.body["first_message_id_allowed_to_move"] != float64(young) || r.body["total_messages_in_topic"] != float64(2) || r.body["total_messages_allowed_to_move"] != float64(1) {
		t.Errorf("got %s, want the counts and the first id allowed", r.raw)
	}
	// Deleting: the sender within the limit, administrators always.
	wantAPISuccess(t, e.request(t, "DELETE", msgPath(id), nil, &e.admin))
	wantAPISuccess(t, e.request(t, "DELETE", msgPath(young), nil, &e.alice))
	wantAPIError(t, e.request(t, "DELETE", msgPath(young), nil, &e.alice), 400, "BAD_REQUEST", "Invalid message(s)")
	e.checkIndexes(t)
}

func TestEditMessage_ContentRerenderedWithMentionsHistoryAndEvent(t *testing.T) {
	e := newTestEnv(t)
	bobQueue := e.registerQueue(t, &e.bob, url.Values{"client_capabilities": {`{"empty_topic_name":true}`}}).str("queue_id")
	id := e.sendAs(t, e.alice, e.general, "lunch")
	wantAPISuccess(t, e.request(t, "PATCH", msgPath(id), url.Values{"content": {"lunch, @**" + e.bob.FullName + "**?"}}, &e.alice))
	mentioned := func() bool {
		var f byte
		mustView(t, e.st, func(tx *bbolt.Tx) error {
			if v := tx.Bucket(bucketFlags).Get(append(itob(e.bob.ID), itob(id)...)); v != nil {
				f = v[0]
			}
			return nil
		})
		return f&flagMentioned != 0
	}
	if !mentioned() {
		t.Errorf("bob is not flagged mentioned after the edit that mentions him")
	}
	events := e.eventsOfType(t, &e.bob, bobQueue, "update_message")
	if len(events) != 1 {
		t.Fatalf("got %d update_message events, want 1", len(events))
	}
	ev := events[0]
	for key, want := range map[string]any{"user_id": float64(e.alice.ID), "message_id": float64(id), "orig_content": "hi", "content": "lunch, @**" + e.bob.FullName + "**?",
		"orig_rendered_content": "<p>hi</p>", "rendering_only": false, "stream_id": float64(e.general.ID), "stream_name": "general", "is_me_message": false} {
		if ev[key] != want {
			t.Errorf("event %s: got %v, want %v", key, ev[key], want)
		}
	}
	if rc, _ := ev["rendered_content"].(string); rc != `<p>lunch, <span class="user-mention" data-user-id="`+strconv.FormatUint(e.bob.ID, 10)+`">@`+e.bob.FullName+`</span>?</p>` {
		t.Errorf("event rendered_content: got %q", rc)
	}
	if fmt.Sprint(ev["flags"]) != "[mentioned]" || fmt.Sprint(ev["message_ids"]) != fmt.Sprint([]any{float64(id)}) {
		t.Errorf("event flags %v, message_ids %v: want [mentioned] and [%d]", ev["flags"], ev["message_ids"], id)
	}
	if _, ok := ev["subject"]; ok {
		t.Errorf("a content edit's event has a subject: %v", ev)
	}
	// Editing the mention away clears the flag.
	wantAPISuccess(t, e.request(t, "PATCH", msgPath(id), url.Values{"content": {"lunch?"}, "topic": {"food"}}, &e.alice))
	if mentioned() {
		t.Errorf("bob is still flagged mentioned after the edit that dropped him")
	}
	// The message object and its history.
	r := e.request(t, "GET", "/api/v1/messages", url.Values{"anchor": {strconv.FormatUint(id, 10)}, "num_before": {"0"}, "num_after": {"0"}}, &e.bob)
	wantAPISuccess(t, r)
	m := r.body["messages"].([]any)[0].(map[string]any)
	if m["last_edit_timestamp"] == nil || m["last_moved_timestamp"] == nil || len(m["edit_history"].([]any)) != 2 {
		t.Errorf("message object: got %v, want last_edit_timestamp, last_moved_timestamp and two history entries", m)
	}
	newest := m["edit_history"].([]any)[0].(map[string]any)
	if newest["prev_content"] != "lunch, @**"+e.bob.FullName+"**?" || newest["prev_topic"] != "lunch" || newest["topic"] != "food" {
		t.Errorf("newest history entry: got %v", newest)
	}
	h := e.request(t, "GET", msgPath(id)+"/history", nil, &e.bob)
	wantAPISuccess(t, h)
	list := h.body["message_history"].([]any)
	var contents, topics []string
	for _, x := range list {
		contents = append(contents, x.(map[string]any)["content"].(string))
		topics = append(topics, x.(map[string]any)["topic"].(string))
	}
	if fmt.Sprint(contents) != "[hi lunch, @**"+e.bob.FullName+"**? lunch?]" || fmt.Sprint(topics) != "[lunch lunch food]" {
		t.Errorf("history: got contents %q topics %q, want the message as it was at each step, oldest first", contents, topics)
	}
	// An empty edit leaves "(deleted)".
	wantAPISuccess(t, e.request(t, "PATCH", msgPath(id), url.Values{"content": {"  "}}, &e.alice))
	if after, _ := e.storedMessage(t, id); after.Content != "(deleted)" {
		t.Errorf("content after an empty edit: got %q, want (deleted)", after.Content)
	}
}

func TestMoveMessages_PropagateModesAndIndexes(t *testing.T) {
	e := newTestEnv(t)
	q := e.registerQueue(t, &e.bob, nil).str("queue_id")
	a := e.sendAs(t, e.alice, e.general, "Lunch")
	b := e.sendAs(t, e.bob, e.general, "lunch")
	c := e.sendAs(t, e.alice, e.general, "lunch")
	other := e.sendAs(t, e.alice, e.general, "other")
	topicOf := func(id uint64) string { m, _ := e.storedMessage(t, id); return m.Topic }
	wantAPISuccess(t, e.request(t, "PATCH", msgPath(b), url.Values{"topic": {"dinner"}, "propagate_mode": {"change_later"}}, &e.alice))
	if got := []string{topicOf(a), topicOf(b), topicOf(c), topicOf(other)}; fmt.Sprint(got) != "[Lunch dinner dinner other]" {
		t.Errorf("change_later: got topics %q", got)
	}
	ev := e.eventsOfType(t, &e.bob, q, "update_message")
	if len(ev) != 1 || fmt.Sprint(ev[0]["message_ids"]) != fmt.Sprint([]any{float64(b), float64(c)}) || ev[0]["propagate_mode"] != "change_later" ||
		ev[0]["orig_subject"] != "lunch" || ev[0]["subject"] != "dinner" {
		t.Errorf("change_later event: got %v", ev)
	}
	wantAPISuccess(t, e.request(t, "PATCH", msgPath(c), url.Values{"topic": {""}, "propagate_mode": {"change_all"}}, &e.bob))
	if got := []string{topicOf(a), topicOf(b), topicOf(c)}; fmt.Sprint(got) != "[Lunch  ]" {
		t.Errorf("change_all: got topics %q", got)
	}
	wantAPISuccess(t, e.request(t, "PATCH", msgPath(a), url.Values{"topic": {"general chat"}}, &e.bob))
	if topicOf(a) != "" {
		t.Errorf("moving to %q: got topic %q, want the empty topic", "general chat", topicOf(a))
	}
	e.checkIndexes(t)
	r := e.request(t, "GET", "/api/v1/users/me/"+strconv.FormatUint(e.general.ID, 10)+"/topics", nil, &e.bob)
	wantAPISuccess(t, r)
	if n := len(r.body["topics"].([]any)); n != 2 {
		t.Errorf("got %d topics after the moves, want 2 (the empty one and other): %s", n, r.raw)
	}
}

func TestMoveMessages_BetweenChannelsCarryUnreadState(t *testing.T) {
	e := newTestEnv(t)
	other := mustCreateChannel(t, e.st, "other", false)
	mustSubscribe(t, e.st, e.bob.user, "other")
	mustSubscribe(t, e.st, e.owner.user, "other")
	aliceQ := e.registerQueue(t, &e.alice, nil).str("queue_id")
	ids := []uint64{e.sendAs(t, e.alice, e.general, "t"), e.sendAs(t, e.alice, e.general, "t"), e.sendAs(t, e.alice, e.general, "t")}
	later := e.sendAs(t, e.alice, other, "x") // above the moved ones in other
	mustUpdateFlags(t, e.st, e.bob.user, ids[:1], flagChange{Flag: "read", Add: true})
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(ids[1])}, "op": {"add"}, "flag": {"starred"}}, &e.bob))
	bobBefore := mustUnread(t, e.st, e.bob.user, other)
	r := e.request(t, "PATCH", msgPath(ids[0]), url.Values{"stream_id": {strconv.FormatUint(other.ID, 10)}, "propagate_mode": {"change_all"},
		"send_notification_to_old_thread": {"true"}, "send_notification_to_new_thread": {"false"}}, &e.alice)
	wantAPISuccess(t, r)
	// bob, in both: as he had them. The owner, new to them: read. Alice
	// (the sender, reading her own) and anyone in general: none there.
	if got, want := mustUnread(t, e.st, e.bob.user, other), mergeSorted(bobBefore, ids[1:]); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bob's unread in other: got %v, want %v", got, want)
	}
	if got := mustUnread(t, e.st, e.bob.user, e.general); len(got) != 0 {
		t.Errorf("bob's unread in general: got %v, want none", got)
	}
	if got := mustUnread(t, e.st, e.owner.user, other); fmt.Sprint(got) != fmt.Sprint([]uint64{later}) {
		t.Errorf("the owner's unread in other: got %v, want only %d (the moved ones come read)", got, later)
	}
	if got := e.starred(t, e.bob); fmt.Sprint(got) != fmt.Sprint([]uint64{ids[1]}) {
		t.Errorf("bob's starred: got %v, want %v", got, ids[1:2])
	}
	for _, id := range ids {
		if m, _ := e.storedMessage(t, id); m.ChannelID != other.ID || m.LastMoved == 0 || len(m.EditHistory) != 1 || m.EditHistory[0].PrevStream != e.general.ID {
			t.Errorf("message %d after the move: %+v", id, m)
		}
	}
	// Alice stays subscribed to nothing of other, which is public: she is
	// told of the move, not of a deletion.
	ev := e.eventsOfType(t, &e.alice, aliceQ, "update_message")
	if len(ev) != 1 || ev[0]["new_stream_id"] != float64(other.ID) || ev[0]["stream_id"] != float64(e.general.ID) || ev[0]["propagate_mode"] != "change_all" || ev[0]["orig_subject"] != "t" {
		t.Errorf("alice's update_message: got %v", ev)
	}
	if del := e.eventsOfType(t, &e.alice, aliceQ, "delete_message"); len(del) != 0 {
		t.Errorf("alice was told of a deletion: %v", del)
	}
	// Moved into a private channel she is not in, they are gone for bob.
	hidden := mustCreateChannel(t, e.st, "hidden", true)
	if err := e.st.addSubscriptionForTest(e.owner.user, hidden); err != nil {
		t.Fatal(err)
	}
	bobQ := e.registerQueue(t, &e.bob, url.Values{"client_capabilities": {`{"bulk_message_deletion":true}`}}).str("queue_id")
	legacyQ := e.registerQueue(t, &e.bob, nil).str("queue_id")
	wantAPISuccess(t, e.request(t, "PATCH", msgPath(ids[0]), url.Values{"stream_id": {strconv.FormatUint(hidden.ID, 10)}, "propagate_mode": {"change_all"}}, &e.owner))
	if got := mustUnread(t, e.st, e.bob.user, other); fmt.Sprint(got) != fmt.Sprint(bobBefore) {
		t.Errorf("bob's unread in other after the second move: got %v, want %v", got, bobBefore)
	}
	if got := e.starred(t, e.bob); len(got) != 0 {
		t.Errorf("bob keeps a star on a message he lost: %v", got)
	}
	del := e.eventsOfType(t, &e.bob, bobQ, "delete_message")
	if len(del) != 1 || fmt.Sprint(del[0]["message_ids"]) != fmt.Sprint([]any{float64(ids[0]), float64(ids[1]), float64(ids[2])}) || del[0]["stream_id"] != float64(other.ID) {
		t.Errorf("bob's bulk delete_message: got %v", del)
	}
	if up := e.eventsOfType(t, &e.bob, bobQ, "update_message"); len(up) != 0 {
		t.Errorf("bob was told of a move into a channel he cannot read: %v", up)
	}
	if del := e.eventsOfType(t, &e.bob, legacyQ, "delete_message"); len(del) != 3 || del[0]["message_id"] != float64(ids[0]) {
		t.Errorf("bob's legacy delete_message events: got %v, want one per message", del)
	}
	e.checkIndexes(t)
}

func TestMoveMessages_UnreadExceptionsStayExact(t *testing.T) {
	// Every reader state a subscriber of both channels can be in, moved
	// across: each message keeps its state and the sets stay minimal.
	e := newTestEnv(t)
	other := mustCreateChannel(t, e.st, "other", false)
	mustSubscribe(t, e.st, e.bob.user, "other")
	var moved []uint64
	for i := 0; i < 12; i++ {
		e.sendAs(t, e.alice, other, "o")
		moved = append(moved, e.sendAs(t, e.alice, e.general, "t"))
	}
	var read []uint64
	for i, id := range moved {
		if i%3 == 0 || i == 1 {
			read = append(read, id)
		}
	}
	mustUpdateFlags(t, e.st, e.bob.user, read, flagChange{Flag: "read", Add: true})
	mustUpdateFlags(t, e.st, e.bob.user, mustUnread(t, e.st, e.bob.user, other)[:5], flagChange{Flag: "read", Add: true})
	wantUnreadOther := mergeSorted(mustUnread(t, e.st, e.bob.user, other), without(moved, read))
	wantAPISuccess(t, e.request(t, "PATCH", msgPath(moved[0]), url.Values{"stream_id": {strconv.FormatUint(other.ID, 10)}, "propagate_mode": {"change_all"}}, &e.alice))
	if got := mustUnread(t, e.st, e.bob.user, other); fmt.Sprint(got) != fmt.Sprint(wantUnreadOther) {
		t.Errorf("bob's unread in other: got %v, want %v", got, wantUnreadOther)
	}
	mustView(t, e.st, func(tx *bbolt.Tx) error {
		for _, ch := range []channel{e.general, other} {
			m, ok := loadMark(tx, e.bob.ID, ch.ID)
			if !ok {
				continue
			}
			// Rule 1: the first message above the watermark is never read_above.
			next := m.index().iter(m.watermark+1, true)
			if first, ok := next(); ok {
				if in, _ := setAmong(m.above(), []uint64{first}); len(in) > 0 {
					t.Errorf("channel %s: the first message above the watermark, %d, is in read_above", ch.Name, first)
				}
			}
			for _, b := range []*bbolt.Bucket{m.above(), m.below()} {
				if b == nil {
					continue
				}
				ids, _ := chunkIDs(b)
				for _, id := range ids {
					if msg, err := messageByID(tx, id); err != nil || msg.ChannelID != ch.ID {
						t.Errorf("channel %s: an exception names message %d, which is not there", ch.Name, id)
					}
				}
			}
		}
		return nil
	})
	if got := mustUnread(t, e.st, e.bob.user, e.general); len(got) != 0 {
		t.Errorf("bob's unread in general: got %v, want none", got)
	}
	if slices.Contains(mustUnread(t, e.st, e.alice.user, e.general), moved[2]) {
		t.Errorf("alice's unread in general still holds a moved message")
	}
}

func TestDeleteMessage_UnreadFlagsReactionsAndIndexesGo(t *testing.T) {
	e := newTestEnv(t)
	bulkQ := e.registerQueue(t, &e.bob, url.Values{"client_capabilities": {`{"bulk_message_deletion":true,"empty_topic_name":true}`}}).str("queue_id")
	legacyQ := e.registerQueue(t, &e.bob, nil).str("queue_id")
	gone := e.sendAs(t, e.alice, e.general, "")
	kept := e.sendAs(t, e.alice, e.general, "")
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(gone)}, "op": {"add"}, "flag": {"starred"}}, &e.bob))
	wantAPISuccess(t, e.request(t, "POST", msgPath(gone)+"/reactions", url.Values{"emoji_name": {"smile"}}, &e.bob))
	// bob reads both and marks the first unread again: it is an exception
	// below his watermark (unread_below), which must go with it.
	mustUpdateFlags(t, e.st, e.bob.user, []uint64{gone, kept}, flagChange{Flag: "read", Add: true})
	mustUpdateFlags(t, e.st, e.bob.user, []uint64{gone}, flagChange{Flag: "read"})
	wantAPISuccess(t, e.request(t, "DELETE", msgPath(gone), nil, &e.alice))
	if got := mustUnread(t, e.st, e.bob.user, e.general); len(got) != 0 {
		t.Errorf("bob's unread: got %v, want none", got)
	}
	if got := e.starred(t, e.bob); len(got) != 0 {
		t.Errorf("bob's starred: got %v, want none", got)
	}
	mustView(t, e.st, func(tx *bbolt.Tx) error {
		if r := reactionsOf(tx, gone); len(r) != 0 {
			t.Errorf("reactions of the deleted message: %v", r)
		}
		return nil
	})
	if _, found := e.storedMessage(t, gone); found {
		t.Errorf("the deleted message is still stored")
	}
	e.checkIndexes(t)
	if del := e.eventsOfType(t, &e.bob, bulkQ, "delete_message"); len(del) != 1 || fmt.Sprint(del[0]["message_ids"]) != fmt.Sprint([]any{float64(gone)}) ||
		del[0]["topic"] != "" || del[0]["message_type"] != "stream" || del[0]["stream_id"] != float64(e.general.ID) {
		t.Errorf("bulk delete_message: got %v", del)
	}
	if del := e.eventsOfType(t, &e.bob, legacyQ, "delete_message"); len(del) != 1 || del[0]["message_id"] != float64(gone) || del[0]["topic"] != emptyTopicDisplayName {
		t.Errorf("legacy delete_message: got %v", del)
	}
	// The channel's figures and GET /messages walk over the gap.
	wantAPISuccess(t, e.request(t, "GET", "/api/v1/streams/"+strconv.FormatUint(e.general.ID, 10), nil, &e.bob))
	r := e.request(t, "GET", "/api/v1/messages", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"10"}}, &e.bob)
	wantAPISuccess(t, r)
	if n := len(r.body["messages"].([]any)); n != 1 {
		t.Errorf("GET /messages: got %d messages, want 1", n)
	}
}

func TestRegister_RealmSaysMessagesCanBeEdited(t *testing.T) {
	e := newTestEnv(t)
	r := e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {`["realm"]`}})
	for key, want := range map[string]any{"realm_allow_message_editing": true, "realm_message_edit_history_visibility_policy": "all", "realm_allow_edit_history": true,
		"realm_message_content_edit_limit_seconds": float64(600), "realm_message_content_delete_limit_seconds": float64(600),
		"realm_move_messages_within_stream_limit_seconds": float64(604800), "realm_move_messages_between_streams_limit_seconds": float64(604800),
		"realm_can_move_messages_between_topics_group": float64(groupEveryone), "realm_can_move_messages_between_channels_group": float64(groupMembers),
		"realm_can_resolve_topics_group": float64(groupEveryone), "realm_can_delete_own_message_group": float64(groupEveryone),
		"realm_can_delete_any_message_group": float64(groupAdministrators)} {
		if r.body[key] != want {
			t.Errorf("%s: got %v, want %v", key, r.body[key], want)
		}
	}
}

// seedSharedSubscribers subscribes n made-up users (no user records) (ids from first on) to the
// channels, straight into the buckets, as of the largest message id.
func seedSharedSubscribers(t testing.TB, st *store, n int, first uint64, channels ...channel) {
	t.Helper()
	mustUpdate(t, st, func(tx *bbolt.Tx) error {
		start := tx.Bucket(bucketMessages).Sequence()
		for i := range uint64(n) {
			uid := first + i
			for _, ch := range channels {
				if err := tx.Bucket(bucketSubscriptions).Put(append(itob(uid), itob(ch.ID)...), []byte("{}")); err != nil {
					return err
				}
				if err := tx.Bucket(bucketSubscribers).Put(append(itob(ch.ID), itob(uid)...), itob(start)); err != nil {
					return err
				}
				if err := startUnread(tx, uid, ch.ID, start); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// BenchmarkEditMessage measures an edit of content (rendered again, the
// mention flags reset for each subscriber), a move of one message
// between two channels (each subscriber's unread state carried over) and
// a delete, by the channels' subscribers.
func BenchmarkEditMessage(b *testing.B) {
	for _, n := range []int{10, 1_000, 10_000} {
		setup := func(b *testing.B) (*benchEnv, channel, uint64) {
			e := newBenchEnv(b)
			other := mustCreateChannel(b, e.st, "other", false)
			mustSubscribe(b, e.st, e.alice.user, "other")
			id := mustSend(b, e.st, e.alice.user, e.general)
			seedSharedSubscribers(b, e.st, n, 1000, e.general, other)
			return e, other, id
		}
		b.Run("content/subscribers="+strconv.Itoa(n), func(b *testing.B) {
			e, _, id := setup(b)
			i := 0
			for b.Loop() {
				i++
				content := "edit " + strconv.Itoa(i)
				if _, err := e.st.editMessage(e.alice.user, messageEdit{MessageID: id, Content: &content, Propagate: changeOne}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("move-channel/subscribers="+strconv.Itoa(n), func(b *testing.B) {
			e, other, id := setup(b)
			to := []uint64{other.ID, e.general.ID}
			i := 0
			for b.Loop() {
				if _, err := e.st.editMessage(e.alice.user, messageEdit{MessageID: id, ChannelID: &to[i%2], Propagate: changeOne}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run("delete/subscribers="+strconv.Itoa(n), func(b *testing.B) {
			e, _, _ := setup(b)
			for b.Loop() {
				b.StopTimer()
				id := mustSend(b, e.st, e.alice.user, e.general)
				b.StartTimer()
				if err := e.st.deleteMessage(e.alice.user, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
