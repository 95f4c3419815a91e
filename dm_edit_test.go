package main

import (
	"bytes"
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

// checkDirectIndexes checks that conversation_messages holds exactly
// the stored direct messages, each under its conversation, and
// dm_messages exactly one entry per participant of each, naming its
// conversation.
func checkDirectIndexes(t testing.TB, tx *bbolt.Tx) {
	t.Helper()
	wantConv, wantDM := 0, 0
	tx.Bucket(bucketMessages).ForEach(func(k, _ []byte) error {
		m, err := messageByID(tx, btoi(k))
		if err != nil || !m.isDirect() {
			return nil
		}
		wantConv++
		if tx.Bucket(bucketConversationMessages).Get(append(itob(m.ConversationID), k...)) == nil {
			t.Errorf("direct message %d is stored without its conversation_messages entry", m.ID)
		}
		participants, ok := conversationParticipants(tx, m.ConversationID)
		if !ok {
			t.Errorf("direct message %d names conversation %d, which is not stored", m.ID, m.ConversationID)
		}
		for _, p := range participants {
			wantDM++
			if v := tx.Bucket(bucketDMMessages).Get(append(itob(p), k...)); v == nil || btoi(v) != m.ConversationID {
				t.Errorf("direct message %d: participant %d's dm_messages entry is %v, want conversation %d", m.ID, p, v, m.ConversationID)
			}
		}
		return nil
	})
	for _, b := range [][]byte{bucketConversationMessages, bucketDMMessages} {
		n := 0
		tx.Bucket(b).ForEach(func(k, v []byte) error {
			n++
			id := btoi(k[8:])
			m, err := messageByID(tx, id)
			switch {
			case err != nil:
				t.Errorf("%s indexes message %d, which is not stored", b, id)
			case string(b) == string(bucketConversationMessages) && btoi(k[:8]) != m.ConversationID:
				t.Errorf("conversation_messages indexes message %d under conversation %d; it is in %d", id, btoi(k[:8]), m.ConversationID)
			case string(b) == string(bucketDMMessages) && !isParticipant(tx, btoi(k[:8]), m.ConversationID):
				t.Errorf("dm_messages gives message %d to user %d, who is not in its conversation", id, btoi(k[:8]))
			}
			return nil
		})
		if want := map[bool]int{true: wantConv, false: wantDM}[string(b) == string(bucketConversationMessages)]; n != want {
			t.Errorf("%s holds %d entries, want %d", b, n, want)
		}
	}
}

// directState is every bucket a direct message's edit or delete may
// write, dumped, to see that a refusal wrote nothing.
func directState(t *testing.T, e *testEnv) string {
	t.Helper()
	var out bytes.Buffer
	mustView(t, e.st, func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketMessages, bucketConversationMessages, bucketDMMessages, bucketFlags, bucketReactions,
			bucketWatermarks, bucketAttachmentRefs} {
			tx.Bucket(b).ForEach(func(k, v []byte) error { fmt.Fprintf(&out, "%s %x %x\n", b, k, v); return nil })
		}
		return nil
	})
	return out.String()
}

func TestEditDM_RefusalsChangeNothing(t *testing.T) {
	e := newTestEnv(t)
	start := time.Now()
	e.st.now = func() time.Time { return start }
	own := e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "hi")
	notBobs := e.sendDM(t, &e.alice, jsonIDs(e.admin.ID), "psst")
	sum := sha256.Sum256([]byte("hi"))
	general := strconv.FormatUint(e.general.ID, 10)
	cases := []struct {
		name   string
		method string
		as     account
		id     uint64
		params url.Values
		after  time.Duration // since the send
		code   string
		msg    string
	}{
		{"someone else's content", "PATCH", e.bob, own, url.Values{"content": {"mine"}}, 0, "BAD_REQUEST", "You don't have permission to edit this message"},
		{"nothing to change", "PATCH", e.alice, own, nil, 0, "BAD_REQUEST", "Nothing to change"},
		{"a topic", "PATCH", e.alice, own, url.Values{"topic": {"lunch"}}, 0, "BAD_REQUEST", "Direct messages cannot have topics."},
		{"a topic with content", "PATCH", e.alice, own, url.Values{"topic": {"lunch"}, "content": {"x"}}, 0, "BAD_REQUEST", "Direct messages cannot have topics."},
		{"its own empty topic is no change", "PATCH", e.alice, own, url.Values{"topic": {"general chat"}}, 0, "BAD_REQUEST", "Nothing to change"},
		{"a channel", "PATCH", e.alice, own, url.Values{"stream_id": {general}}, 0, "BAD_REQUEST", "Direct messages cannot be moved to channels."},
		{"a channel and a topic", "PATCH", e.bob, own, url.Values{"stream_id": {general}, "topic": {"x"}}, 0, "BAD_REQUEST", "Direct messages cannot be moved to channels."},
		{"propagate without a move", "PATCH", e.alice, own, url.Values{"content": {"x"}, "propagate_mode": {"change_all"}}, 0, "BAD_REQUEST", "Invalid propagate_mode without topic edit"},
		{"content after ten minutes", "PATCH", e.alice, own, url.Values{"content": {"late"}, "topic": {"x"}}, 621 * time.Second, "BAD_REQUEST", "The time limit for editing this message has passed"},
		{"stale content", "PATCH", e.alice, own, url.Values{"content": {"x"}, "prev_content_sha256": {hex.EncodeToString(sum[:1])}}, 0, "EXPECTATION_MISMATCH", "'prev_content_sha256' value does not match the expected value."},
		{"a non-participant's edit", "PATCH", e.bob, notBobs, url.Values{"content": {"x"}}, 0, "BAD_REQUEST", "Invalid message(s)"},
		{"a non-participant's topic", "PATCH", e.owner, own, url.Values{"topic": {"x"}}, 0, "BAD_REQUEST", "Invalid message(s)"},
		{"a non-participant's history", "GET", e.bob, notBobs, nil, 0, "BAD_REQUEST", "Invalid message(s)"},
		{"deleting someone else's", "DELETE", e.bob, own, nil, 0, "BAD_REQUEST", "You don't have permission to delete this message"},
		{"deleting after ten minutes", "DELETE", e.alice, own, nil, 601 * time.Second, "BAD_REQUEST", "The time limit for deleting this message has passed"},
		{"a non-participant's delete", "DELETE", e.bob, notBobs, nil, 0, "BAD_REQUEST", "Invalid message(s)"},
		{"an administrator not in it", "DELETE", e.owner, own, nil, 0, "BAD_REQUEST", "Invalid message(s)"},
	}
	before := directState(t, e)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.st.now = func() time.Time { return start.Add(c.after) }
			path := msgPath(c.id)
			if c.method == "GET" {
				path += "/history"
			}
			wantAPIError(t, e.request(t, c.method, path, c.params, &c.as), http.StatusBadRequest, c.code, c.msg)
			if after := directState(t, e); after != before {
				t.Errorf("the refusal wrote:\n%s\nwant:\n%s", after, before)
			}
		})
	}
	e.checkIndexes(t)
}

func TestEditDM_ContentMentionsHistoryAndEvents(t *testing.T) {
	e := newTestEnv(t)
	types := url.Values{"event_types": {`["update_message"]`}}
	aliceQ := e.registerQueue(t, &e.alice, types).str("queue_id")
	bobQ := e.registerQueue(t, &e.bob, types).str("queue_id")
	ownerQ := e.registerQueue(t, &e.owner, url.Values{"event_types": {`["update_message"]`}, "all_public_streams": {"true"}}).str("queue_id")
	id := e.sendDM(t, &e.alice, jsonIDs(e.bob.ID, e.admin.ID), "hi")
	mention := "lunch, @**" + e.bob.FullName + "**?"
	r := e.request(t, "PATCH", msgPath(id), url.Values{"content": {mention}}, &e.alice)
	wantAPISuccess(t, r)
	if fmt.Sprint(r.body["detached_uploads"]) != "[]" {
		t.Errorf("detached_uploads: got %v, want []", r.body["detached_uploads"])
	}
	flagsOn := func(a account) byte {
		var f byte
		mustView(t, e.st, func(tx *bbolt.Tx) error {
			if v := tx.Bucket(bucketFlags).Get(append(itob(a.ID), itob(id)...)); v != nil {
				f = v[0]
			}
			return nil
		})
		return f
	}
	if flagsOn(e.bob)&flagMentioned == 0 || flagsOn(e.admin)&flagMentioned != 0 {
		t.Errorf("after the edit that mentions bob: bob's flags %b, the admin's %b; want bob alone mentioned", flagsOn(e.bob), flagsOn(e.admin))
	}
	events := e.eventsOfType(t, &e.bob, bobQ, "update_message")
	if len(events) != 1 {
		t.Fatalf("bob got %d update_message events, want 1", len(events))
	}
	ev := events[0]
	for key, want := range map[string]any{"user_id": float64(e.alice.ID), "message_id": float64(id), "orig_content": "hi", "content": mention,
		"orig_rendered_content": "<p>hi</p>", "rendering_only": false, "is_me_message": false} {
		if ev[key] != want {
			t.Errorf("event %s: got %v, want %v", key, ev[key], want)
		}
	}
	if rc, _ := ev["rendered_content"].(string); rc != `<p>lunch, <span class="user-mention" data-user-id="`+utoa(e.bob.ID)+`">@`+e.bob.FullName+`</span>?</p>` {
		t.Errorf("event rendered_content: got %q", rc)
	}
	if fmt.Sprint(ev["flags"]) != "[mentioned]" || fmt.Sprint(ev["message_ids"]) != fmt.Sprint([]any{float64(id)}) || ev["edit_timestamp"] == nil {
		t.Errorf("event flags %v, message_ids %v, edit_timestamp %v: want [mentioned], [%d] and a time", ev["flags"], ev["message_ids"], ev["edit_timestamp"], id)
	}
	for _, key := range []string{"stream_id", "stream_name", "subject", "orig_subject", "propagate_mode", "new_stream_id", "topic_links"} {
		if v, ok := ev[key]; ok {
			t.Errorf("a direct message's edit event has %s: %v", key, v)
		}
	}
	if a := e.eventsOfType(t, &e.alice, aliceQ, "update_message"); len(a) != 1 || fmt.Sprint(a[0]["flags"]) != "[read]" {
		t.Errorf("alice's events: got %v, want one with flags [read]", a)
	}
	if o := e.eventsOfType(t, &e.owner, ownerQ, "update_message"); len(o) != 0 {
		t.Errorf("the owner heard of an edit in a conversation they are not in: %v", o)
	}
	// Editing the mention away clears the flag.
	wantAPISuccess(t, e.request(t, "PATCH", msgPath(id), url.Values{"content": {"lunch?"}}, &e.alice))
	if flagsOn(e.bob) != 0 {
		t.Errorf("bob's flags after the edit that dropped him: %b, want none", flagsOn(e.bob))
	}
	// The message object, its history, and the state around it.
	list := e.messagesAs(t, &e.bob, `[{"operator":"dm","operand":[`+utoa(e.alice.ID)+`,`+utoa(e.admin.ID)+`]}]`)
	if len(list) != 1 || list[0]["content"] != "<p>lunch?</p>" || list[0]["last_edit_timestamp"] == nil || len(list[0]["edit_history"].([]any)) != 2 {
		t.Fatalf("bob's conversation: got %v, want the edited message with two history entries", list)
	}
	if newest := list[0]["edit_history"].([]any)[0].(map[string]any); newest["prev_content"] != mention || newest["prev_topic"] != nil || newest["stream"] != nil {
		t.Errorf("newest history entry: got %v", newest)
	}
	if _, moved := list[0]["last_moved_timestamp"]; moved {
		t.Errorf("a content edit set last_moved_timestamp: %v", list[0])
	}
	if !slices.Equal(flagsOf(list[0]), []string{}) {
		t.Errorf("bob's flags: got %v, want none (unread, no longer mentioned)", flagsOf(list[0]))
	}
	h := e.request(t, "GET", msgPath(id)+"/history", nil, &e.admin)
	wantAPISuccess(t, h)
	var contents []string
	for _, x := range h.body["message_history"].([]any) {
		contents = append(contents, x.(map[string]any)["content"].(string))
	}
	if fmt.Sprint(contents) != "[hi "+mention+" lunch?]" {
		t.Errorf("history: got %q, want the message at each step, oldest first", contents)
	}
	wantUnreadDMs(t, e, e.bob, []uint64{id})
	e.checkIndexes(t)
}

func TestDeleteDM_IndexesUnreadFlagsReactionsAndEventsGo(t *testing.T) {
	e := newTestEnv(t)
	start := time.Now()
	e.st.now = func() time.Time { return start }
	types := url.Values{"event_types": {`["delete_message"]`}}
	bulkQ := e.registerQueue(t, &e.bob, url.Values{"event_types": types["event_types"], "client_capabilities": {`{"bulk_message_deletion":true}`}}).str("queue_id")
	legacyQ := e.registerQueue(t, &e.bob, types).str("queue_id")
	ownerQ := e.registerQueue(t, &e.owner, url.Values{"event_types": types["event_types"], "all_public_streams": {"true"}}).str("queue_id")
	gone := e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "@**"+e.bob.FullName+"** hi")
	kept := e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "there")
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(gone)}, "op": {"add"}, "flag": {"starred"}}, &e.bob))
	wantAPISuccess(t, e.request(t, "POST", msgPath(gone)+"/reactions", url.Values{"emoji_name": {"smile"}}, &e.bob))
	// bob reads both and marks the first unread again: an exception below
	// his watermark in the conversation, which must go with it.
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(gone, kept)}, "op": {"add"}, "flag": {"read"}}, &e.bob))
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(gone)}, "op": {"remove"}, "flag": {"read"}}, &e.bob))
	wantUnreadDMs(t, e, e.bob, []uint64{gone})

	wantAPISuccess(t, e.request(t, "DELETE", msgPath(gone), nil, &e.alice))
	if _, found := e.storedMessage(t, gone); found {
		t.Errorf("the deleted message is still stored")
	}
	wantUnreadDMs(t, e, e.bob, nil)
	if got := e.starred(t, e.bob); len(got) != 0 {
		t.Errorf("bob's starred: got %v, want none", got)
	}
	mustView(t, e.st, func(tx *bbolt.Tx) error {
		if r := reactionsOf(tx, gone); len(r) != 0 {
			t.Errorf("reactions of the deleted message: %v", r)
		}
		for _, a := range []account{e.alice, e.bob} {
			if v := tx.Bucket(bucketFlags).Get(append(itob(a.ID), itob(gone)...)); v != nil {
				t.Errorf("%s's flags on the deleted message: %b", a.Email, v[0])
			}
		}
		return nil
	})
	e.checkIndexes(t)
	for _, a := range []*account{&e.alice, &e.bob} {
		if got := idsOf(e.messagesAs(t, a, `[{"operator":"is","operand":"dm"}]`)); !slices.Equal(got, []uint64{kept}) {
			t.Errorf("%s's direct messages: got %v, want [%d]", a.Email, got, kept)
		}
	}
	if del := e.eventsOfType(t, &e.bob, bulkQ, "delete_message"); len(del) != 1 || fmt.Sprint(del[0]["message_ids"]) != fmt.Sprint([]any{float64(gone)}) ||
		del[0]["message_type"] != "private" || del[0]["stream_id"] != nil || del[0]["topic"] != nil {
		t.Errorf("bulk delete_message: got %v, want message_ids [%d], message_type private, no channel or topic", del, gone)
	}
	if del := e.eventsOfType(t, &e.bob, legacyQ, "delete_message"); len(del) != 1 || del[0]["message_id"] != float64(gone) ||
		del[0]["message_type"] != "private" || del[0]["stream_id"] != nil || del[0]["topic"] != nil {
		t.Errorf("legacy delete_message: got %v, want message_id %d, message_type private", del, gone)
	}
	if del := e.eventsOfType(t, &e.owner, ownerQ, "delete_message"); len(del) != 0 {
		t.Errorf("the owner heard of a delete in a conversation they are not in: %v", del)
	}
	// bob's unread state in the conversation still works: kept unread again.
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(kept)}, "op": {"remove"}, "flag": {"read"}}, &e.bob))
	wantUnreadDMs(t, e, e.bob, []uint64{kept})

	// An administrator deletes a direct message they are in, past the
	// limit; the sender no longer can.
	toAdmin := e.sendDM(t, &e.alice, jsonIDs(e.admin.ID), "old")
	e.st.now = func() time.Time { return start.Add(30 * 24 * time.Hour) }
	wantAPIError(t, e.request(t, "DELETE", msgPath(toAdmin), nil, &e.alice), 400, "BAD_REQUEST", "The time limit for deleting this message has passed")
	wantAPISuccess(t, e.request(t, "DELETE", msgPath(toAdmin), nil, &e.admin))
	// The realm's can_delete_own_message_group binds a direct message's sender.
	e.st.now = func() time.Time { return start }
	own := e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "mine")
	wantAPISuccess(t, e.request(t, "PATCH", "/api/v1/realm", url.Values{"can_delete_own_message_group": {`{"new":8}`}}, &e.admin))
	wantAPIError(t, e.request(t, "DELETE", msgPath(own), nil, &e.alice), 400, "BAD_REQUEST", "You don't have permission to delete this message")
	e.checkIndexes(t)
}

// wantRule1 checks unread.go's rule 1 for a user's read mark (a channel
// id or a conversation's key): the first message above the watermark is
// never in read_above, and no exception names a message that is gone.
func wantRule1(t *testing.T, e *testEnv, userID, key uint64) {
	t.Helper()
	mustView(t, e.st, func(tx *bbolt.Tx) error {
		m, ok := loadMark(tx, userID, key)
		if !ok {
			t.Errorf("user %d has no read mark at %x", userID, key)
			return nil
		}
		if first, ok := m.index().iter(m.watermark+1, true)(); ok {
			if in, _ := setAmong(m.above(), []uint64{first}); len(in) > 0 {
				t.Errorf("mark %x: the first message above the watermark, %d, is in read_above", key, first)
			}
		}
		for _, b := range []*bbolt.Bucket{m.above(), m.below()} {
			if b == nil {
				continue
			}
			ids, _ := chunkIDs(b)
			for _, id := range ids {
				if _, err := messageByID(tx, id); err != nil {
					t.Errorf("mark %x: an exception names message %d, which is gone", key, id)
				}
			}
		}
		return nil
	})
}

func TestDeleteMessage_TheWatermarkPassesWhatRemains(t *testing.T) {
	// bob read the first and third messages, not the second: his
	// watermark is at the first, the third is read above it. Once the
	// second is deleted the third is the first above the watermark, which
	// must then pass it (rule 1), in a channel as in a conversation.
	e := newTestEnv(t)
	var chIDs, dmIDs []uint64
	for i := 0; i < 3; i++ {
		chIDs = append(chIDs, e.sendAs(t, e.alice, e.general, "c"))
		dmIDs = append(dmIDs, e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "d"))
	}
	read := []uint64{chIDs[0], chIDs[2], dmIDs[0], dmIDs[2]}
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(read...)}, "op": {"add"}, "flag": {"read"}}, &e.bob))
	wantAPISuccess(t, e.request(t, "DELETE", msgPath(chIDs[1]), nil, &e.alice))
	wantAPISuccess(t, e.request(t, "DELETE", msgPath(dmIDs[1]), nil, &e.alice))
	wantRule1(t, e, e.bob.ID, e.general.ID)
	var conv uint64
	mustView(t, e.st, func(tx *bbolt.Tx) error { conv, _ = conversationOf(tx, []uint64{e.alice.ID, e.bob.ID}); return nil })
	wantRule1(t, e, e.bob.ID, conversationKey(conv))
	wantUnreadDMs(t, e, e.bob, nil)
	if got := mustUnread(t, e.st, e.bob.user, e.general); len(got) != 0 {
		t.Errorf("bob's unread in general: got %v, want none", got)
	}
}

func TestEditDM_UploadLinksFollowTheContent(t *testing.T) {
	e := newTestEnv(t)
	plan := e.mustUpload(t, &e.alice, "plan.txt", "between us")
	id := e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "soon")
	if rec := e.fetch(t, &e.bob, plan); rec.Code == http.StatusOK {
		t.Errorf("bob before the link: got %d, want a refusal", rec.Code)
	}
	wantAPISuccess(t, e.request(t, "PATCH", msgPath(id), url.Values{"content": {"[plan](" + plan + ")"}}, &e.alice))
	if rec := e.fetch(t, &e.bob, plan); rec.Code != http.StatusOK || rec.Body.String() != "between us" {
		t.Errorf("bob once the edit links it: got %d %q, want 200 and the file", rec.Code, rec.Body.String())
	}
	wantAPISuccess(t, e.request(t, "DELETE", msgPath(id), nil, &e.alice))
	if rec := e.fetch(t, &e.bob, plan); rec.Code == http.StatusOK {
		t.Errorf("bob once the linking message is deleted: got %d, want a refusal", rec.Code)
	}
}
