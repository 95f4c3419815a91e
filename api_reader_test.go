package main

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/bbolt"
)

// TestRenderMessage_RendersAsASendWouldAndStoresNothing: POST
// /messages/render (render_message_backend) answers the content rendered
// as the caller's message would be, emoticons by their setting, through
// the route winning over /messages/{message_id}, and keeps
// nothing; content is required and at most 10,000 characters.
func TestRenderMessage_RendersAsASendWouldAndStoresNothing(t *testing.T) {
	e := newTestEnv(t)
	var before uint64
	mustView(t, e.st, func(tx *bbolt.Tx) error { before = tx.Bucket(bucketMessages).Sequence(); return nil })
	r := e.request(t, http.MethodPost, "/api/v1/messages/render", url.Values{"content": {"**foo** @**bob@example.com**"}}, &e.alice)
	wantAPISuccess(t, r)
	want := `<p><strong>foo</strong> <span class="user-mention" data-user-id="` + strconv.FormatUint(e.bob.ID, 10) + `">@bob@example.com</span></p>`
	if got := r.str("rendered"); got != want {
		t.Errorf("rendered %q, want %q", got, want)
	}
	if !slices.Contains(e.server.routeList(), "POST /api/v1/messages/render") {
		t.Error("the route table has no POST /api/v1/messages/render")
	}
	r = e.request(t, http.MethodPost, "/api/v1/messages/render", url.Values{"content": {""}}, &e.alice)
	wantAPISuccess(t, r)
	if got := r.str("rendered"); got != "" {
		t.Errorf("empty content rendered %q", got)
	}
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"translate_emoticons": {"true"}}, &e.alice))
	r = e.request(t, http.MethodPost, "/api/v1/messages/render", url.Values{"content": {":)"}}, &e.alice)
	wantAPISuccess(t, r)
	if got := r.str("rendered"); !strings.Contains(got, "emoji-1f642") {
		t.Errorf("with translate_emoticons: rendered %q", got)
	}
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/messages/render", nil, &e.alice), http.StatusBadRequest, "REQUEST_VARIABLE_MISSING", "Missing 'content' argument")
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/messages/render", url.Values{"content": {strings.Repeat("é", 10001)}}, &e.alice),
		http.StatusBadRequest, "BAD_REQUEST", "content is too long (limit: 10000 characters)")
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/render", url.Values{"content": {strings.Repeat("é", 10000)}}, &e.alice))
	mustView(t, e.st, func(tx *bbolt.Tx) error {
		if got := tx.Bucket(bucketMessages).Sequence(); got != before {
			t.Errorf("rendering stored messages: sequence %d, was %d", got, before)
		}
		return nil
	})
}

// TestMatchesNarrow_AnswersWhichOfTheIDsMatch: GET /messages/matches_narrow
// (messages_in_narrow_backend) answers, for each of msg_ids the caller
// may read that matches the narrow, match_content (the rendered content)
// and match_subject (the topic, HTML-escaped as Django's escape does).
func TestMatchesNarrow_AnswersWhichOfTheIDsMatch(t *testing.T) {
	e := newTestEnv(t)
	send := func(topic, content string) uint64 {
		r := e.sendContent(t, &e.alice, topic, content)
		wantAPISuccess(t, r)
		return uint64(r.body["id"].(float64))
	}
	pizza := send(`a'b "c" <d> & e`, "**Pizza** tonight")
	other := send("lunch", "sushi")
	secret, err := e.st.sendMessage(e.alice.user, channelRef{ID: e.secret.ID}, "hidden", "pizza too", "test")
	if err != nil {
		t.Fatal(err)
	}
	ids := jsonIDs(pizza, other, secret.ID, 987654)
	check := func(who *account, narrow string, want map[uint64]string) {
		t.Helper()
		r := e.request(t, http.MethodGet, "/api/v1/messages/matches_narrow", url.Values{"msg_ids": {ids}, "narrow": {narrow}}, who)
		wantAPISuccess(t, r)
		got := object(r.body["messages"])
		if len(got) != len(want) {
			t.Errorf("%s: got %v, want ids %v", narrow, got, want)
		}
		for id, subject := range want {
			m := object(got[strconv.FormatUint(id, 10)])
			if m == nil {
				t.Errorf("%s: %d missing from %v", narrow, id, got)
				continue
			}
			if m["match_subject"] != subject {
				t.Errorf("%s: %d match_subject %q, want %q", narrow, id, m["match_subject"], subject)
			}
			if c, _ := m["match_content"].(string); !strings.HasPrefix(c, "<p>") || len(m) != 2 {
				t.Errorf("%s: %d answered %v", narrow, id, m)
			}
		}
	}
	escaped := "a&#x27;b &quot;c&quot; &lt;d&gt; &amp; e"
	check(&e.bob, `[{"operator":"search","operand":"pizza"}]`, map[uint64]string{pizza: escaped})
	check(&e.alice, `[{"operator":"search","operand":"pizza"}]`, map[uint64]string{pizza: escaped, secret.ID: "hidden"})
	check(&e.bob, `[]`, map[uint64]string{pizza: escaped, other: "lunch"})
	check(&e.bob, `[["topic","lunch"]]`, map[uint64]string{other: "lunch"})
	r := e.request(t, http.MethodGet, "/api/v1/messages/matches_narrow", url.Values{"msg_ids": {jsonIDs(other)}, "narrow": {`[]`}}, &e.bob)
	if m := object(object(r.body["messages"])[strconv.FormatUint(other, 10)]); m["match_content"] != "<p>sushi</p>" {
		t.Errorf("match_content: %v", m)
	}
	for _, c := range []struct {
		params url.Values
		code   string
		msg    string
	}{
		{url.Values{"narrow": {`[]`}}, "REQUEST_VARIABLE_MISSING", "Missing 'msg_ids' argument"},
		{url.Values{"msg_ids": {ids}}, "REQUEST_VARIABLE_MISSING", "Missing 'narrow' argument"},
		{url.Values{"msg_ids": {`[1,"x"]`}, "narrow": {`[]`}}, "BAD_REQUEST", "msg_ids[1] is not an integer"},
		{url.Values{"msg_ids": {ids}, "narrow": {`[{"operator":"bogus","operand":"x"}]`}}, "BAD_NARROW", "Invalid narrow operator: unknown operator bogus"},
		{url.Values{"msg_ids": {"[" + strings.Repeat("1,", maxMessagesPerRequest) + "1]"}, "narrow": {`[]`}}, "BAD_REQUEST", "Too many messages requested (maximum 5000)."},
	} {
		wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/messages/matches_narrow", c.params, &e.bob), http.StatusBadRequest, c.code, c.msg)
	}
}

// TestReadReceipts_ListWhoReadAsZulipDoes: GET
// /messages/{message_id}/read_receipts (read_receipts.py) lists the
// recipients who read the message, leaving out its sender, those whose
// send_read_receipts is off, those the caller muted and those who muted
// the caller; a message the caller may not read is "Invalid message(s)".
// zulite's organisation has read receipts on, as Zulip creates an
// invite-only one, and register says so.
func TestReadReceipts_ListWhoReadAsZulipDoes(t *testing.T) {
	e := newTestEnv(t)
	mustSubscribe(t, e.st, e.owner.user, "general")
	mustSubscribe(t, e.st, e.admin.user, "general")
	id := e.sendAs(t, e.alice, e.general, "lunch")
	path := "/api/v1/messages/" + strconv.FormatUint(id, 10) + "/read_receipts"
	receipts := func(who *account) []uint64 {
		t.Helper()
		r := e.request(t, http.MethodGet, path, nil, who)
		wantAPISuccess(t, r)
		var ids []uint64
		list, _ := r.body["user_ids"].([]any)
		for _, v := range list {
			ids = append(ids, uint64(v.(float64)))
		}
		slices.Sort(ids)
		return ids
	}
	if got := receipts(&e.bob); len(got) != 0 {
		t.Errorf("nobody read it yet: %v", got)
	}
	for _, a := range []*account{&e.alice, &e.bob, &e.owner, &e.admin} {
		wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(id)}, "op": {"add"}, "flag": {"read"}}, a))
	}
	want := []uint64{e.owner.ID, e.admin.ID, e.bob.ID}
	slices.Sort(want)
	if got := receipts(&e.bob); !slices.Equal(got, want) {
		t.Errorf("after reading: got %v, want %v (never the sender)", got, want)
	}
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"send_read_receipts": {"false"}}, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/muted_users/"+strconv.FormatUint(e.owner.ID, 10), nil, &e.bob))
	if got := receipts(&e.bob); !slices.Equal(got, []uint64{e.bob.ID}) {
		t.Errorf("bob, who muted the owner: got %v, want only himself", got)
	}
	if got := receipts(&e.owner); !slices.Equal(got, []uint64{e.owner.ID}) {
		t.Errorf("the owner, whom bob muted: got %v, want only himself", got)
	}
	want = []uint64{e.owner.ID, e.bob.ID}
	slices.Sort(want)
	if got := receipts(&e.alice); !slices.Equal(got, want) {
		t.Errorf("alice: got %v, want %v", got, want)
	}
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(id)}, "op": {"remove"}, "flag": {"read"}}, &e.bob))
	if got := receipts(&e.alice); !slices.Equal(got, []uint64{e.owner.ID}) {
		t.Errorf("after bob marked it unread: got %v", got)
	}
	secret, err := e.st.sendMessage(e.alice.user, channelRef{ID: e.secret.ID}, "hidden", "psst", "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/api/v1/messages/" + strconv.FormatUint(secret.ID, 10) + "/read_receipts", "/api/v1/messages/987654/read_receipts"} {
		wantAPIError(t, e.request(t, http.MethodGet, p, nil, &e.bob), http.StatusBadRequest, "BAD_REQUEST", "Invalid message(s)")
	}
	r := e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["realm"]`}})
	if r.body["realm_enable_read_receipts"] != true {
		t.Errorf("register's realm_enable_read_receipts: %v", r.body["realm_enable_read_receipts"])
	}
}

// TestReadReceipts_DirectMessages: a direct message's receipts are its
// participants who read it, the sender aside.
func TestReadReceipts_DirectMessages(t *testing.T) {
	e := newTestEnv(t)
	r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"direct"}, "to": {jsonIDs(e.bob.ID, e.owner.ID)}, "content": {"hi"}}, &e.alice)
	wantAPISuccess(t, r)
	id := strconv.FormatUint(uint64(r.body["id"].(float64)), 10)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {"[" + id + "]"}, "op": {"add"}, "flag": {"read"}}, &e.owner))
	r = e.request(t, http.MethodGet, "/api/v1/messages/"+id+"/read_receipts", nil, &e.bob)
	wantAPISuccess(t, r)
	if got := r.body["user_ids"].([]any); len(got) != 1 || uint64(got[0].(float64)) != e.owner.ID {
		t.Errorf("got %v, want the owner", got)
	}
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/messages/"+id+"/read_receipts", nil, &e.admin), http.StatusBadRequest, "BAD_REQUEST", "Invalid message(s)")
}
