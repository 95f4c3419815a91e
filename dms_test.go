package main

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"go.etcd.io/bbolt"
)

// sendDM sends a direct message through the API and answers its id.
func (e *testEnv) sendDM(t *testing.T, from *account, to string, content string) uint64 {
	t.Helper()
	r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"direct"}, "to": {to}, "content": {content}}, from)
	wantAPISuccess(t, r)
	id, _ := r.body["id"].(float64)
	return uint64(id)
}

// messagesAs fetches the newest messages of a narrow (JSON; "" for none).
func (e *testEnv) messagesAs(t *testing.T, a *account, narrow string) []map[string]any {
	t.Helper()
	params := url.Values{"anchor": {"newest"}, "num_before": {"100"}, "num_after": {"0"}}
	if narrow != "" {
		params.Set("narrow", narrow)
	}
	r := e.request(t, http.MethodGet, "/api/v1/messages", params, a)
	wantAPISuccess(t, r)
	var out []map[string]any
	if r.status != http.StatusOK {
		return out
	}
	for _, m := range r.body["messages"].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

func idsOf(list []map[string]any) []uint64 {
	ids := []uint64{}
	for _, m := range list {
		ids = append(ids, uint64(m["id"].(float64)))
	}
	return ids
}

func flagsOf(m map[string]any) []string {
	out := []string{}
	for _, f := range m["flags"].([]any) {
		out = append(out, f.(string))
	}
	return out
}

func countConversations(t *testing.T, e *testEnv) int {
	t.Helper()
	n := 0
	mustView(t, e.st, func(tx *bbolt.Tx) error { n = tx.Bucket(bucketConversations).Stats().KeyN; return nil })
	return n
}

func utoa(id uint64) string { return strconv.FormatUint(id, 10) }

func TestSendDM_EveryRecipientFormReachesOneConversation(t *testing.T) {
	e := newTestEnv(t)
	var sent []uint64
	for _, c := range []struct {
		rule, typ, to string
	}{
		{"a JSON list of ids", "direct", jsonIDs(e.bob.ID)},
		{"a JSON list of e-mails", "direct", `["bob@example.com"]`},
		{"a comma-separated string, as older clients send", "private", "bob@example.com"},
		{"a JSON string", "private", `"bob@example.com, "`},
		{"e-mails in any case, repeats once, the sender named too", "direct", `["BOB@example.com","bob@example.com","alice@example.com"]`},
	} {
		r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {c.typ}, "to": {c.to}, "content": {c.rule}}, &e.alice)
		wantAPISuccess(t, r)
		sent = append(sent, uint64(r.body["id"].(float64)))
	}
	got := e.messagesAs(t, &e.bob, `[{"operator":"dm","operand":[`+utoa(e.alice.ID)+`]}]`)
	if !slices.Equal(idsOf(got), sent) {
		t.Errorf("bob's conversation with alice: got %v, want %v", idsOf(got), sent)
	}
	if n := countConversations(t, e); n != 1 {
		t.Errorf("conversations: got %d, want 1", n)
	}
	// bob answering is the same conversation.
	e.sendDM(t, &e.bob, jsonIDs(e.alice.ID), "back")
	if n := countConversations(t, e); n != 1 {
		t.Errorf("conversations after bob's answer: got %d, want 1", n)
	}
}

func TestSendDM_RefusalsInZulipsWordsChangeNothing(t *testing.T) {
	e := newTestEnv(t)
	gone, _ := mustCreateUser(t, e.st, "gone@example.com", roleMember, false)
	if err := e.st.setActive(gone.Email, false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rule   string
		params url.Values
		msg    string
	}{
		{"to is required", url.Values{"content": {"x"}}, "Message must have recipients"},
		{"an empty list names nobody", url.Values{"to": {"[]"}, "content": {"x"}}, "Message must have recipients"},
		{"blank e-mails name nobody", url.Values{"to": {" , "}, "content": {"x"}}, "Message must have recipients"},
		{"a number is not a list", url.Values{"to": {"7"}, "content": {"x"}}, "Invalid data type for recipients"},
		{"a list of objects", url.Values{"to": {`[{}]`}, "content": {"x"}}, "Invalid data type for recipients"},
		{"e-mails then ids", url.Values{"to": {`["bob@example.com",3]`}, "content": {"x"}}, "Recipient lists may contain emails or user IDs, but not both."},
		{"ids then e-mails", url.Values{"to": {`[3,"bob@example.com"]`}, "content": {"x"}}, "Recipient lists may contain emails or user IDs, but not both."},
		{"an unknown e-mail", url.Values{"to": {`["bob@example.com","nobody@example.com"]`}, "content": {"x"}}, "Invalid email 'nobody@example.com'"},
		{"an unknown id", url.Values{"to": {`[999]`}, "content": {"x"}}, "Invalid user ID 999"},
		{"a deactivated user", url.Values{"to": {jsonIDs(e.bob.ID, gone.ID)}, "content": {"x"}}, "'gone@example.com' is no longer using Zulip."},
		{"content is checked after the recipients", url.Values{"to": {jsonIDs(e.bob.ID)}, "content": {"  "}}, "Message must not be empty"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			c.params.Set("type", "direct")
			r := e.request(t, http.MethodPost, "/api/v1/messages", c.params, &e.alice)
			wantAPIError(t, r, http.StatusBadRequest, "BAD_REQUEST", c.msg)
			if id, _ := e.st.maxMessageID(); id != 0 {
				t.Errorf("a message was stored: max id %d", id)
			}
			if n := countConversations(t, e); n != 0 {
				t.Errorf("conversations: got %d, want 0", n)
			}
		})
	}
	r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"direct"}, "to": {jsonIDs(e.bob.ID)}}, &e.alice)
	wantAPIError(t, r, http.StatusBadRequest, "REQUEST_VARIABLE_MISSING", "Missing 'content' argument")
}

func TestSendDM_RealmSettingsDecideWhoMayWrite(t *testing.T) {
	e := newTestEnv(t)
	set := func(name string, group int) {
		t.Helper()
		r := e.request(t, http.MethodPatch, "/api/v1/realm", url.Values{name: {`{"new":` + strconv.Itoa(group) + `}`}}, &e.admin)
		wantAPISuccess(t, r)
	}
	send := func(from *account, to ...uint64) response {
		return e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"direct"}, "to": {jsonIDs(to...)}, "content": {"x"}}, from)
	}
	wantAPISuccess(t, send(&e.alice, e.bob.ID)) // everyone, by default

	set("direct_message_permission_group", groupNobody)
	wantAPIError(t, send(&e.alice, e.bob.ID), http.StatusBadRequest, "BAD_REQUEST", "Direct messages are disabled in this organization.")
	wantAPISuccess(t, send(&e.alice, e.alice.ID))         // to oneself
	wantAPISuccess(t, send(&e.alice, e.bot.ID))           // to bots
	wantAPISuccess(t, send(&e.bot, e.alice.ID, e.bob.ID)) // bots write freely

	set("direct_message_permission_group", groupAdministrators)
	wantAPIError(t, send(&e.alice, e.bob.ID), http.StatusBadRequest, "BAD_REQUEST", "This conversation does not include any users who can authorize it.")
	wantAPISuccess(t, send(&e.alice, e.admin.ID)) // an administrator in it authorizes it

	set("direct_message_permission_group", groupEveryone)
	set("direct_message_initiator_group", groupAdministrators)
	wantAPIError(t, send(&e.alice, e.owner.ID), http.StatusBadRequest, "BAD_REQUEST", "You do not have permission to initiate direct message conversations.")
	wantAPISuccess(t, send(&e.alice, e.bob.ID)) // a conversation that exists may go on
	wantAPISuccess(t, send(&e.owner, e.alice.ID))
	wantAPISuccess(t, send(&e.alice, e.owner.ID)) // now that the owner started it
}

func TestDM_MessageObjectsAndFlags(t *testing.T) {
	e := newTestEnv(t)
	one := e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "hello bob")
	group := e.sendDM(t, &e.alice, jsonIDs(e.bob.ID, e.owner.ID), "hello all")
	self := e.sendDM(t, &e.alice, jsonIDs(e.alice.ID), "note to self")

	got := e.messagesAs(t, &e.bob, `[["is","dm"]]`)
	if !slices.Equal(idsOf(got), []uint64{one, group}) {
		t.Fatalf("bob's direct messages: got %v, want %v", idsOf(got), []uint64{one, group})
	}
	m := got[1]
	if m["type"] != "private" || m["subject"] != "" || m["stream_id"] != nil || m["sender_id"] != float64(e.alice.ID) {
		t.Errorf("message object: got type %v subject %q stream_id %v sender %v", m["type"], m["subject"], m["stream_id"], m["sender_id"])
	}
	var recipients []uint64
	for _, r := range m["display_recipient"].([]any) {
		u := r.(map[string]any)
		recipients = append(recipients, uint64(u["id"].(float64)))
		if u["email"] == "" || u["full_name"] == nil || u["is_mirror_dummy"] != false {
			t.Errorf("display_recipient element: got %v", u)
		}
	}
	if want := []uint64{e.owner.ID, e.alice.ID, e.bob.ID}; !slices.Equal(recipients, want) {
		t.Errorf("display_recipient: got %v, want every participant by id %v", recipients, want)
	}
	if f := flagsOf(m); len(f) != 0 {
		t.Errorf("bob's flags: got %v, want none (unread)", f)
	}
	mine := e.messagesAs(t, &e.alice, `[["is","private"]]`)
	if !slices.Equal(idsOf(mine), []uint64{one, group, self}) {
		t.Fatalf("alice's direct messages: got %v", idsOf(mine))
	}
	for _, m := range mine {
		if f := flagsOf(m); !slices.Equal(f, []string{"read"}) {
			t.Errorf("sender's flags on %v: got %v, want [read]", m["id"], f)
		}
	}
	if mine[0]["recipient_id"] == mine[1]["recipient_id"] {
		t.Errorf("two conversations share recipient_id %v", mine[0]["recipient_id"])
	}

	// Flags by id and by narrow, and mark_all_as_read.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(one)}, "op": {"add"}, "flag": {"read"}}, &e.bob))
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(one)}, "op": {"add"}, "flag": {"starred"}}, &e.bob))
	wantUnreadDMs(t, e, e.bob, []uint64{group})
	r := e.request(t, http.MethodPost, "/api/v1/messages/flags/narrow", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"100"},
		"narrow": {`[{"operator":"dm","operand":"alice@example.com,owner@example.com"}]`}, "op": {"add"}, "flag": {"read"}}, &e.bob)
	wantAPISuccess(t, r)
	if r.body["updated_count"] != float64(1) || r.body["processed_count"] != float64(1) {
		t.Errorf("flags/narrow on the group: got %s", r.raw)
	}
	wantUnreadDMs(t, e, e.bob, nil)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(one, group)}, "op": {"remove"}, "flag": {"read"}}, &e.bob))
	wantUnreadDMs(t, e, e.bob, []uint64{one, group})
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/mark_all_as_read", nil, &e.bob))
	wantUnreadDMs(t, e, e.bob, nil)
	if got := e.starred(t, e.bob); !slices.Equal(got, []uint64{one}) {
		t.Errorf("bob's starred: got %v, want %v", got, []uint64{one})
	}
}

func wantUnreadDMs(t *testing.T, e *testEnv, a account, want []uint64) {
	t.Helper()
	var got []uint64
	mustView(t, e.st, func(tx *bbolt.Tx) error {
		var err error
		got, err = allUnreadIDs(tx, a.ID)
		return err
	})
	if !slices.Equal(got, want) {
		t.Errorf("%s's unread: got %v, want %v", a.Email, got, want)
	}
}

func TestDM_Narrows(t *testing.T) {
	e := newTestEnv(t)
	channelMsg := e.sendAs(t, e.bob, e.general, "t")
	one := e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "one to one")
	group := e.sendDM(t, &e.bob, jsonIDs(e.alice.ID, e.owner.ID), "group")
	self := e.sendDM(t, &e.alice, jsonIDs(e.alice.ID), "self")
	other := e.sendDM(t, &e.owner, jsonIDs(e.bob.ID), "not alice's")
	a, b, o := utoa(e.alice.ID), utoa(e.bob.ID), utoa(e.owner.ID)
	for _, c := range []struct {
		rule, narrow string
		want         []uint64
	}{
		{"no narrow: channels and direct messages", "", []uint64{channelMsg, one, group, self}},
		{"dm by id: the conversation exactly", `[{"operator":"dm","operand":[` + b + `]}]`, []uint64{one}},
		{"dm with oneself named", `[{"operator":"dm","operand":[` + a + `,` + b + `]}]`, []uint64{one}},
		{"dm by e-mails", `[["dm","bob@example.com,owner@example.com"]]`, []uint64{group}},
		{"dm with oneself alone", `[{"operator":"dm","operand":[` + a + `]}]`, []uint64{self}},
		{"legacy pm-with", `[["pm-with","bob@example.com"]]`, []uint64{one}},
		{"dm-including", `[{"operator":"dm-including","operand":` + b + `}]`, []uint64{one, group}},
		{"group-pm-with: groups only", `[["group-pm-with","bob@example.com"]]`, []uint64{group}},
		{"is:dm", `[["is","dm"]]`, []uint64{one, group, self}},
		{"is:private", `[["is","private"]]`, []uint64{one, group, self}},
		{"negated is:dm", `[{"operator":"is","operand":"dm","negated":true}]`, []uint64{channelMsg}},
		{"negated dm", `[{"operator":"is","operand":"dm"},{"operator":"dm","operand":[` + b + `],"negated":true}]`, []uint64{group, self}},
		{"combined with sender", `[["is","dm"],["sender","bob@example.com"]]`, []uint64{group}},
		{"combined with is:unread", `[["is","dm"],["is","unread"]]`, []uint64{group}},
		{"combined with search", `[{"operator":"dm-including","operand":` + o + `},{"operator":"search","operand":"group"}]`, []uint64{group}},
		{"channel terms exclude them", `[["channel","general"]]`, []uint64{channelMsg}},
		{"a conversation that does not exist", `[{"operator":"dm","operand":[` + o + `]}]`, []uint64{}},
		{"with a direct message: its conversation", `[["with","` + utoa(group) + `"]]`, []uint64{group}},
		{"id of one's own", `[["id","` + utoa(one) + `"]]`, []uint64{one}},
		{"id of another's", `[["id","` + utoa(other) + `"]]`, []uint64{}},
	} {
		t.Run(c.rule, func(t *testing.T) {
			if got := idsOf(e.messagesAs(t, &e.alice, c.narrow)); !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
	for _, c := range []struct{ narrow, msg string }{
		{`[["dm","nobody@example.com"]]`, "Invalid narrow operator: unknown user in nobody@example.com"},
		{`[{"operator":"dm","operand":[999]}]`, "Invalid narrow operator: unknown user in [999]"},
		{`[["dm-including","nobody@example.com"]]`, "Invalid narrow operator: unknown user nobody@example.com"},
		{`[["dm","bob@example.com"],["channel","general"]]`, "Invalid narrow operator: No message can be both a channel message and direct message"},
		{`[["with","` + utoa(other) + `"]]`, "Invalid narrow operator: Invalid 'with' operand"},
	} {
		r := e.request(t, http.MethodGet, "/api/v1/messages", url.Values{"anchor": {"newest"}, "num_before": {"10"}, "num_after": {"0"}, "narrow": {c.narrow}}, &e.alice)
		wantAPIError(t, r, http.StatusBadRequest, "BAD_NARROW", c.msg)
	}
}

func TestDM_EventsReachParticipantsWithTheirFlags(t *testing.T) {
	e := newTestEnv(t)
	types := url.Values{"event_types": {`["message","update_message_flags"]`}}
	aliceQ := e.registerQueue(t, &e.alice, types).str("queue_id")
	bobQ := e.registerQueue(t, &e.bob, types).str("queue_id")
	ownerQ := e.registerQueue(t, &e.owner, url.Values{"event_types": {`["message"]`}, "all_public_streams": {"true"}}).str("queue_id")
	r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"direct"}, "to": {jsonIDs(e.bob.ID)}, "content": {"hi @**|" + utoa(e.bob.ID) + "**"},
		"queue_id": {aliceQ}, "local_id": {"42"}}, &e.alice)
	wantAPISuccess(t, r)
	id := uint64(r.body["id"].(float64))

	bobEvents := e.pollNow(t, &e.bob, bobQ, -1)
	if len(bobEvents) != 1 || bobEvents[0]["type"] != "message" {
		t.Fatalf("bob's events: got %v", bobEvents)
	}
	if f := bobEvents[0]["flags"].([]any); len(f) != 1 || f[0] != "mentioned" {
		t.Errorf("bob's flags: got %v, want [mentioned] (unread)", f)
	}
	msg := bobEvents[0]["message"].(map[string]any)
	if msg["type"] != "private" || len(msg["display_recipient"].([]any)) != 2 || msg["id"] != float64(id) {
		t.Errorf("bob's message: got %v", msg)
	}
	aliceEvents := e.pollNow(t, &e.alice, aliceQ, -1)
	if len(aliceEvents) != 1 || aliceEvents[0]["local_message_id"] != "42" || !slices.Equal(flagsOf(aliceEvents[0]), []string{"read"}) {
		t.Errorf("alice's events: got %v", aliceEvents)
	}
	if ev := e.pollNow(t, &e.owner, ownerQ, -1); len(ev) != 0 {
		t.Errorf("the owner heard of a conversation they are not in: %v", ev)
	}

	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(id)}, "op": {"add"}, "flag": {"read"}}, &e.bob))
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(id)}, "op": {"remove"}, "flag": {"read"}}, &e.bob))
	bobEvents = e.pollNow(t, &e.bob, bobQ, 0)
	if len(bobEvents) != 2 || bobEvents[0]["type"] != "update_message_flags" || bobEvents[1]["op"] != "remove" {
		t.Fatalf("bob's flag events: got %v", bobEvents)
	}
	details := bobEvents[1]["message_details"].(map[string]any)[utoa(id)].(map[string]any)
	if details["type"] != "private" || len(details["user_ids"].([]any)) != 1 || details["user_ids"].([]any)[0] != float64(e.alice.ID) {
		t.Errorf("message_details: got %v, want type private, user_ids [alice]", details)
	}
}

func TestRegister_DirectMessageState(t *testing.T) {
	e := newTestEnv(t)
	one := e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "one")
	group := e.sendDM(t, &e.alice, jsonIDs(e.bob.ID, e.owner.ID), "group")
	e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"direct"}, "to": {jsonIDs(e.bob.ID)}, "content": {"self"}, "read_by_sender": {"false"}}, &e.bob)
	r := e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["message","update_message_flags","recent_private_conversations"]`}})
	unread := r.body["unread_msgs"].(map[string]any)
	if unread["count"] != float64(3) {
		t.Errorf("count: got %v, want 3", unread["count"])
	}
	pms := unread["pms"].([]any)
	if len(pms) != 2 {
		t.Fatalf("pms: got %v", pms)
	}
	first, second := pms[0].(map[string]any), pms[1].(map[string]any)
	if first["other_user_id"] != float64(e.alice.ID) || first["sender_id"] != float64(e.alice.ID) || len(first["unread_message_ids"].([]any)) != 1 ||
		first["unread_message_ids"].([]any)[0] != float64(one) {
		t.Errorf("pms[0]: got %v, want alice's %d", first, one)
	}
	if second["other_user_id"] != float64(e.bob.ID) {
		t.Errorf("pms[1]: got %v, want the conversation with oneself", second)
	}
	huddles := unread["huddles"].([]any)
	ids := []uint64{e.owner.ID, e.alice.ID, e.bob.ID}
	slices.Sort(ids)
	wantString := utoa(ids[0]) + "," + utoa(ids[1]) + "," + utoa(ids[2])
	if len(huddles) != 1 || huddles[0].(map[string]any)["user_ids_string"] != wantString ||
		huddles[0].(map[string]any)["unread_message_ids"].([]any)[0] != float64(group) {
		t.Errorf("huddles: got %v, want %q with %d", huddles, wantString, group)
	}
	recent := r.body["recent_private_conversations"].([]any)
	if len(recent) != 3 {
		t.Fatalf("recent_private_conversations: got %v", recent)
	}
	newest := recent[0].(map[string]any)
	if len(newest["user_ids"].([]any)) != 0 {
		t.Errorf("newest conversation: got %v, want the one with oneself (no other users)", newest)
	}
	last := recent[2].(map[string]any)
	if last["max_message_id"] != float64(one) || len(last["user_ids"].([]any)) != 1 || last["user_ids"].([]any)[0] != float64(e.alice.ID) {
		t.Errorf("oldest conversation: got %v, want alice's at %d", last, one)
	}
	if n := len(e.registerQueue(t, &e.admin, url.Values{"fetch_event_types": {`["recent_private_conversations"]`}}).body["recent_private_conversations"].([]any)); n != 0 {
		t.Errorf("the admin, in no conversation, got %d recent conversations", n)
	}
}

func TestDM_ReactionsForParticipantsOnly(t *testing.T) {
	e := newTestEnv(t)
	id := e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "react to me")
	types := url.Values{"event_types": {`["reaction"]`}}
	bobQ := e.registerQueue(t, &e.bob, types).str("queue_id")
	ownerQ := e.registerQueue(t, &e.owner, types).str("queue_id")
	path := "/api/v1/messages/" + utoa(id) + "/reactions"
	wantAPIError(t, e.request(t, http.MethodPost, path, url.Values{"emoji_name": {"octopus"}}, &e.owner), http.StatusBadRequest, "BAD_REQUEST", "Invalid message(s)")
	wantAPISuccess(t, e.request(t, http.MethodPost, path, url.Values{"emoji_name": {"octopus"}}, &e.bob))
	got := e.messagesAs(t, &e.alice, `[["id","`+utoa(id)+`"]]`)
	if len(got) != 1 || len(got[0]["reactions"].([]any)) != 1 {
		t.Fatalf("alice's view of the reaction: got %v", got)
	}
	if ev := e.pollNow(t, &e.bob, bobQ, -1); len(ev) != 1 || ev[0]["type"] != "reaction" {
		t.Errorf("bob's events: got %v", ev)
	}
	if ev := e.pollNow(t, &e.owner, ownerQ, -1); len(ev) != 0 {
		t.Errorf("the owner heard of a reaction in a conversation they are not in: %v", ev)
	}
}

// BenchmarkSendDirect stores direct messages to conversations of 2, 3
// and 10 participants (the conversation exists), beside a channel
// message to 10 subscribers for comparison: a direct message writes an
// entry per participant in dm_messages, a channel message nothing per
// subscriber.
func BenchmarkSendDirect(b *testing.B) {
	for _, n := range []int{2, 3, 10} {
		b.Run("participants="+strconv.Itoa(n), func(b *testing.B) {
			e := newBenchEnv(b)
			var to directRecipients
			for i := range n - 1 {
				u, _ := mustCreateUser(b, e.st, "p"+strconv.Itoa(i)+"@example.com", roleMember, false)
				to.IDs = append(to.IDs, u.ID)
			}
			out := outgoingDirect{To: to, Content: "hello", Client: "test", ReadBySender: true}
			if _, err := e.st.postDirect(e.alice.user, out); err != nil { // makes the conversation
				b.Fatal(err)
			}
			before := e.st.db.Stats()
			for b.Loop() {
				if _, err := e.st.postDirect(e.alice.user, out); err != nil {
					b.Fatal(err)
				}
			}
			reportPages(b, e.st, before)
		})
	}
	b.Run("channel, subscribers=10", func(b *testing.B) {
		e := newBenchEnv(b)
		seedSubscribers(b, e.st, e.general, 9)
		mustSend(b, e.st, e.alice.user, e.general)
		before := e.st.db.Stats()
		for b.Loop() {
			if _, err := e.st.sendMessage(e.alice.user, channelRef{ID: e.general.ID}, "topic", "hello", "test"); err != nil {
				b.Fatal(err)
			}
		}
		reportPages(b, e.st, before)
	})
}

func TestDM_LinkedUploadsForParticipantsOnly(t *testing.T) {
	e := newTestEnv(t)
	plan := e.mustUpload(t, &e.alice, "plan.txt", "between us")
	e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "[plan]("+plan+")")
	if rec := e.fetch(t, &e.bob, plan); rec.Code != http.StatusOK || rec.Body.String() != "between us" {
		t.Errorf("bob, a participant: got %d %q, want 200 and the file", rec.Code, rec.Body.String())
	}
	if rec := e.fetch(t, &e.owner, plan); rec.Code == http.StatusOK {
		t.Errorf("the owner, not a participant: got %d, want a refusal", rec.Code)
	}
}
