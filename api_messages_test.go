package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/bbolt"
)

// page fetches GET /messages as the account and returns the ids.
func (e *testEnv) page(t *testing.T, a *account, params url.Values) (response, []uint64) {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/messages", params, a)
	var ids []uint64
	msgs, _ := r.body["messages"].([]any)
	for _, m := range msgs {
		ids = append(ids, uint64(m.(map[string]any)["id"].(float64)))
	}
	return r, ids
}

func narrowOf(terms ...any) string {
	b, _ := json.Marshal(terms)
	return string(b)
}

func rangeParams(anchor string, before, after int, narrow string) url.Values {
	p := url.Values{"anchor": {anchor}, "num_before": {strconv.Itoa(before)}, "num_after": {strconv.Itoa(after)}}
	if narrow != "" {
		p.Set("narrow", narrow)
	}
	return p
}

func TestGetMessages_AnchorsAndRanges(t *testing.T) {
	e := newTestEnv(t)
	var ids []uint64
	for i := range 10 {
		ids = append(ids, e.sendAs(t, e.bob, e.general, "t"+strconv.Itoa(i%2)))
	}
	mustUpdateFlags(t, e.st, e.alice.user, ids[:4], flagChange{Flag: "read", Add: true})
	for _, c := range []struct {
		rule                   string
		params                 url.Values
		want                   []uint64
		anchor                 uint64
		foundAnchor, old, newe bool
	}{
		{"newest, 3 before", rangeParams("newest", 3, 0, ""), ids[7:], largestMessageID, false, false, true},
		{"oldest, 3 after", rangeParams("oldest", 0, 3, ""), ids[:3], 0, false, true, false},
		{"an id, 2 each side", rangeParams(strconv.FormatUint(ids[5], 10), 2, 2, ""), ids[3:8], ids[5], true, false, false},
		{"first_unread", rangeParams("first_unread", 1, 2, ""), ids[3:7], ids[4], true, false, false},
		{"more than there is", rangeParams("oldest", 0, 100, ""), ids, 0, false, true, true},
		{"without the anchor", func() url.Values {
			p := rangeParams(strconv.FormatUint(ids[5], 10), 0, 2, "")
			p.Set("include_anchor", "false")
			return p
		}(), ids[6:8], ids[5], false, false, false},
		{"a topic, case-insensitively", rangeParams("newest", 100, 0, narrowOf(map[string]any{"operator": "topic", "operand": "T1"})), []uint64{ids[1], ids[3], ids[5], ids[7], ids[9]}, largestMessageID, false, true, true},
		{"unread in a channel, legacy pairs", rangeParams("oldest", 0, 100, narrowOf([]string{"stream", "general"}, []string{"is", "unread"})), ids[4:], 0, false, true, true},
		{"negated unread", rangeParams("oldest", 0, 100, narrowOf(map[string]any{"operator": "is", "operand": "unread", "negated": true})), ids[:4], 0, false, true, true},
		{"sender by id", rangeParams("oldest", 0, 100, narrowOf(map[string]any{"operator": "sender", "operand": e.alice.ID})), nil, 0, false, true, true},
		{"one id", rangeParams("oldest", 0, 100, narrowOf(map[string]any{"operator": "id", "operand": ids[2]})), ids[2:3], 0, false, true, true},
		{"sender by e-mail, subject alias", rangeParams("oldest", 0, 100, narrowOf([]string{"sender", "BOB@example.com"}, []string{"subject", "t0"})), []uint64{ids[0], ids[2], ids[4], ids[6], ids[8]}, 0, false, true, true},
		{"with: the conversation of a message", rangeParams("oldest", 0, 100, narrowOf(map[string]any{"operator": "with", "operand": ids[3]})), []uint64{ids[1], ids[3], ids[5], ids[7], ids[9]}, 0, false, true, true},
		{"negated channel", rangeParams("oldest", 0, 100, narrowOf(map[string]any{"operator": "channel", "operand": "general", "negated": true})), nil, 0, false, true, true},
		{"anchor 0 is the oldest end", rangeParams("0", 0, 2, ""), ids[:2], 0, false, true, false},
		{"a negative anchor is 0", rangeParams("-5", 0, 2, ""), ids[:2], 0, false, true, false},
		{"a huge anchor is the newest end", rangeParams("99999999999999999999", 2, 0, ""), ids[8:], largestMessageID, false, false, true},
		{"first_unread with nothing unread in the narrow", rangeParams("first_unread", 2, 0, narrowOf([]string{"topic", "nope"})), nil, largestMessageID, false, true, true},
		{"the anchor alone, excluded but both counts 0", func() url.Values {
			p := rangeParams(strconv.FormatUint(ids[5], 10), 0, 0, "")
			p.Set("include_anchor", "false")
			return p
		}(), ids[5:6], ids[5], true, false, false},
		{"use_first_unread_anchor", func() url.Values {
			p := rangeParams("", 0, 1, "")
			p.Del("anchor")
			p.Set("use_first_unread_anchor", "true")
			return p
		}(), ids[4:6], ids[4], true, false, false},
	} {
		t.Run(c.rule, func(t *testing.T) {
			r, got := e.page(t, &e.alice, c.params)
			wantAPISuccess(t, r)
			if !slices.Equal(got, c.want) {
				t.Errorf("ids: got %v, want %v", got, c.want)
			}
			if r.body["anchor"] != float64(c.anchor) || r.body["found_anchor"] != c.foundAnchor || r.body["found_oldest"] != c.old || r.body["found_newest"] != c.newe || r.body["history_limited"] != false {
				t.Errorf("got anchor %v found_anchor %v found_oldest %v found_newest %v, want %d %v %v %v",
					r.body["anchor"], r.body["found_anchor"], r.body["found_oldest"], r.body["found_newest"], c.anchor, c.foundAnchor, c.old, c.newe)
			}
		})
	}
}

func TestGetMessages_MessageFieldsFlagsAndVisibility(t *testing.T) {
	e := newTestEnv(t)
	id := e.sendAs(t, e.bob, e.general, "lunch")
	if _, err := e.st.sendMessage(e.alice.user, channelRef{ID: e.secret.ID}, "s", "<b>secret</b>\n\nline1\nline2", ""); err != nil {
		t.Fatal(err)
	}
	mustUpdateFlags(t, e.st, e.alice.user, []uint64{id}, flagChange{Flag: "starred", Add: true})

	r, got := e.page(t, &e.alice, rangeParams("oldest", 0, 10, ""))
	if len(got) != 2 {
		t.Fatalf("alice sees %v, want both messages", got)
	}
	msgs := r.body["messages"].([]any)
	m := msgs[0].(map[string]any)
	for _, f := range []string{"id", "sender_id", "sender_email", "sender_full_name", "type", "stream_id", "recipient_id", "display_recipient", "subject", "content", "content_type", "timestamp", "avatar_url", "reactions", "submessages", "topic_links", "is_me_message", "client", "flags", "sender_realm_str"} {
		if _, ok := m[f]; !ok {
			t.Errorf("message lacks %s", f)
		}
	}
	if m["type"] != "stream" || m["display_recipient"] != "general" || m["subject"] != "lunch" || m["sender_email"] != e.bob.Email {
		t.Errorf("message: got %v", m)
	}
	if flags := m["flags"]; !slices.Equal(toStrings(flags), []string{"starred"}) {
		t.Errorf("flags: got %v, want [starred] (unread and starred)", flags)
	}
	if html := msgs[1].(map[string]any)["content"]; html != "<p>&lt;b&gt;secret&lt;/b&gt;</p>\n<p>line1<br>\nline2</p>" {
		t.Errorf("rendered content: got %q", html)
	}
	raw := rangeParams("oldest", 0, 10, "")
	raw.Set("apply_markdown", "false")
	r, _ = e.page(t, &e.alice, raw)
	if m := r.body["messages"].([]any)[1].(map[string]any); m["content"] != "<b>secret</b>\n\nline1\nline2" || m["content_type"] != "text/x-markdown" {
		t.Errorf("raw content: got %v %v", m["content"], m["content_type"])
	}

	// bob is not in the private channel; the owner is subscribed to nothing.
	if _, got := e.page(t, &e.bob, rangeParams("oldest", 0, 10, "")); !slices.Equal(got, []uint64{id}) {
		t.Errorf("bob sees %v, want only [%d]", got, id)
	}
	if _, got := e.page(t, &e.bob, rangeParams("oldest", 0, 10, narrowOf([]string{"channel", "secret"}))); len(got) != 0 {
		t.Errorf("bob narrowed to the private channel sees %v, want nothing", got)
	}
	if _, got := e.page(t, &e.owner, rangeParams("oldest", 0, 10, "")); len(got) != 0 {
		t.Errorf("owner without a channel narrow sees %v, want nothing received", got)
	}
	// Starring makes a message the owner's, as Zulip's historical rows do.
	mustUpdateFlags(t, e.st, e.owner.user, []uint64{id}, flagChange{Flag: "starred", Add: true})
	for _, narrow := range []string{"", `[["is","starred"]]`} {
		if _, got := e.page(t, &e.owner, rangeParams("oldest", 0, 10, narrow)); !slices.Equal(got, []uint64{id}) {
			t.Errorf("owner's starred message, narrow %q: got %v, want [%d]", narrow, got, id)
		}
	}
	r, got = e.page(t, &e.owner, rangeParams("oldest", 0, 10, narrowOf([]string{"channel", "general"})))
	if !slices.Equal(got, []uint64{id}) || !slices.Equal(toStrings(r.body["messages"].([]any)[0].(map[string]any)["flags"]), []string{"read", "starred", "historical"}) {
		t.Errorf("owner narrowed to general: got %v %s, want [%d] with read, starred, historical", got, r.raw, id)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

func TestGetMessages_Errors(t *testing.T) {
	e := newTestEnv(t)
	for _, c := range []struct {
		rule      string
		params    url.Values
		code, msg string
	}{
		{"anchor is required (Zulip's text, with its period)", url.Values{"num_before": {"1"}, "num_after": {"1"}}, "BAD_REQUEST", "Missing 'anchor' argument."},
		{"num_before is required", url.Values{"anchor": {"newest"}, "num_after": {"1"}}, "REQUEST_VARIABLE_MISSING", "Missing 'num_before' argument"},
		{"a bad anchor", rangeParams("latest", 1, 1, ""), "BAD_REQUEST", "Invalid anchor"},
		{"a negative count", rangeParams("newest", -1, 1, ""), "BAD_REQUEST", "num_before is too small"},
		{"too many", rangeParams("newest", 3000, 3000, ""), "BAD_REQUEST", "Too many messages requested (maximum 5000)."},
		{"too many, checked before the excluded anchor", func() url.Values {
			p := rangeParams("5", 3000, 3000, "")
			p.Set("include_anchor", "false")
			return p
		}(), "BAD_REQUEST", "Too many messages requested (maximum 5000)."},
		{"a blank search", rangeParams("newest", 1, 0, `[["search","  "]]`), "BAD_REQUEST", `elem["operand"] cannot be blank.`},
		{"a dm operand of the wrong type", rangeParams("newest", 1, 0, `[{"operator":"dm","operand":{"x":1}}]`), "BAD_REQUEST", `elem["operand"] is not a string or an integer list`},
		{"channel and dm together", rangeParams("newest", 1, 0, `[["channel","general"],["is","dm"]]`), "BAD_NARROW", "Invalid narrow operator: No message can be both a channel message and direct message"},
		{"unknown channels operand", rangeParams("newest", 1, 0, `[["streams","x"]]`), "BAD_NARROW", "Invalid narrow operator: unknown channels operand x"},
		{"with an unknown message", rangeParams("newest", 1, 0, `[["with","999"]]`), "BAD_NARROW", "Invalid narrow operator: Invalid 'with' operand"},
		{"an anchor is checked before the narrow's meaning", url.Values{"num_before": {"1"}, "num_after": {"0"}, "narrow": {`[["foo","x"]]`}}, "BAD_REQUEST", "Missing 'anchor' argument."},
		{"anchor excluded in the middle", func() url.Values {
			p := rangeParams("5", 1, 1, "")
			p.Set("include_anchor", "false")
			return p
		}(), "BAD_REQUEST", "The anchor can only be excluded at an end of the range"},
		{"narrow not a list", rangeParams("newest", 1, 0, `{"operator":"is"}`), "REQUEST_VARIABLE_INVALID", `Bad value for 'narrow': {"operator":"is"}`},
		{"a legacy triple", rangeParams("newest", 1, 0, `[["is","unread","x"]]`), "REQUEST_VARIABLE_INVALID", `Bad value for 'narrow': [["is","unread","x"]]`},
		{"operator missing", rangeParams("newest", 1, 0, `[{"operand":"x"}]`), "BAD_REQUEST", "operator key is missing from elem"},
		{"operand of the wrong type", rangeParams("newest", 1, 0, `[{"operator":"topic","operand":7}]`), "BAD_REQUEST", `elem["operand"] is not a string`},
		{"unknown operator", rangeParams("newest", 1, 0, `[["foo","x"]]`), "BAD_NARROW", "Invalid narrow operator: unknown operator foo"},
		{"unknown channel", rangeParams("newest", 1, 0, `[["channel","nope"]]`), "BAD_NARROW", "Invalid narrow operator: unknown channel nope"},
		{"unknown channel id", rangeParams("newest", 1, 0, `[{"operator":"channel","operand":99}]`), "BAD_NARROW", "Invalid narrow operator: unknown channel 99"},
		{"unknown sender", rangeParams("newest", 1, 0, `[["sender","x@example.com"]]`), "BAD_NARROW", "Invalid narrow operator: unknown user x@example.com"},
		{"unknown is operand", rangeParams("newest", 1, 0, `[["is","shiny"]]`), "BAD_NARROW", "Invalid narrow operator: unknown 'is' operand shiny"},
		{"bad message id", rangeParams("newest", 1, 0, `[["id","x"]]`), "BAD_NARROW", "Invalid narrow operator: Invalid message ID"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			r := e.request(t, http.MethodGet, "/api/v1/messages", c.params, &e.alice)
			wantAPIError(t, r, 400, c.code, c.msg)
		})
	}
}

func TestUpdateFlagsForNarrow(t *testing.T) {
	e := newTestEnv(t)
	var ids []uint64
	for range 10 {
		ids = append(ids, e.sendAs(t, e.bob, e.general, "t"))
	}
	flags := func(a *account, params url.Values) response {
		return e.requestAs(t, multipartForm, http.MethodPost, "/api/v1/messages/flags/narrow", params, a)
	}
	p := rangeParams(strconv.FormatUint(ids[5], 10), 2, 2, "[]")
	p.Set("op", "add")
	p.Set("flag", "read")
	r := flags(&e.alice, p)
	wantAPISuccess(t, r)
	want := map[string]any{"processed_count": 5.0, "updated_count": 5.0, "first_processed_id": float64(ids[3]), "last_processed_id": float64(ids[7]), "found_oldest": false, "found_newest": false}
	for k, v := range want {
		if r.body[k] != v {
			t.Errorf("%s: got %v, want %v", k, r.body[k], v)
		}
	}
	if got := mustUnread(t, e.st, e.alice.user, e.general); !slices.Equal(got, append(slices.Clone(ids[:3]), ids[8:]...)) {
		t.Errorf("unread after: got %v", got)
	}
	// The replacement for mark_stream_as_read: the whole channel.
	p = rangeParams("oldest", 0, 5000, narrowOf([]string{"channel", "general"}))
	p.Set("op", "add")
	p.Set("flag", "read")
	r = flags(&e.alice, p)
	if r.body["processed_count"] != 10.0 || r.body["updated_count"] != 5.0 || r.body["found_newest"] != true {
		t.Errorf("whole channel: got %s", r.raw)
	}
	if got := mustUnread(t, e.st, e.alice.user, e.general); len(got) != 0 {
		t.Errorf("unread after the whole channel: got %v, want none", got)
	}
	p.Set("op", "remove")
	r = flags(&e.alice, p)
	if r.body["updated_count"] != 10.0 || len(mustUnread(t, e.st, e.alice.user, e.general)) != 10 {
		t.Errorf("removing read: got %s, want all 10 unread again", r.raw)
	}
	p = rangeParams("newest", 0, 0, narrowOf([]string{"channel", "nope"}))
	p.Set("op", "add")
	p.Set("flag", "read")
	wantAPIError(t, flags(&e.alice, p), 400, "BAD_NARROW", "Invalid narrow operator: unknown channel nope")
	p = rangeParams("newest", 1, 0, "[]")
	p.Set("op", "add")
	p.Set("flag", "mentioned")
	wantAPIError(t, flags(&e.alice, p), 400, "BAD_REQUEST", "Flag not editable: 'mentioned'")
	r = flags(&e.alice, rangeParams("newest", 1, 0, ""))
	wantAPIError(t, r, 400, "REQUEST_VARIABLE_MISSING", "Missing 'narrow' argument")
	p = rangeParams("oldest", 0, 6000, "[]")
	p.Set("op", "add")
	p.Set("flag", "starred")
	if r = flags(&e.alice, p); r.body["processed_count"] != 10.0 || r.body["found_newest"] != true {
		t.Errorf("6000 after: got %s, want the range clamped and all 10 processed", r.raw)
	}
	if !jsonEqual(r.body["ignored_because_not_subscribed_channels"], []uint64{}) {
		t.Errorf("adding starred: got %s, want ignored_because_not_subscribed_channels []", r.raw)
	}
	p = rangeParams("oldest", 0, 10, narrowOf([]string{"channel", "general"}))
	p.Set("op", "remove")
	p.Set("flag", "read")
	r = flags(&e.owner, p) // not subscribed: nothing becomes unread, and the channel is named
	if r.body["processed_count"] != 10.0 || r.body["updated_count"] != 0.0 || !jsonEqual(r.body["ignored_because_not_subscribed_channels"], []uint64{e.general.ID}) {
		t.Errorf("owner removing read: got %s, want 10 processed, 0 updated, general ignored", r.raw)
	}
	p = rangeParams("newest", 10, 0, "[]")
	p.Set("op", "add")
	p.Set("flag", "read")
	r = flags(&e.owner, p) // nothing received: historical messages are read already
	if r.body["processed_count"] != 0.0 || r.body["first_processed_id"] != nil {
		t.Errorf("owner: got %s, want nothing processed and null ids", r.raw)
	}
	if got := mustUnread(t, e.st, e.alice.user, e.general); len(got) != 10 {
		t.Errorf("alice's unread after refused calls: got %d, want 10", len(got))
	}
}

func TestSendMessage_TargetsAndUnread(t *testing.T) {
	e := newTestEnv(t)
	send := func(a *account, params url.Values) response {
		return e.request(t, http.MethodPost, "/api/v1/messages", params, a)
	}
	id := strconv.FormatUint(e.general.ID, 10)
	var sent []uint64
	for _, to := range []string{id, "general", `["general"]`, "[" + id + "]", "GENERAL"} {
		r := send(&e.bob, url.Values{"type": {"stream"}, "to": {to}, "topic": {"lunch"}, "content": {"hi"}})
		wantAPISuccess(t, r)
		msgID, _ := r.body["id"].(float64)
		sent = append(sent, uint64(msgID))
	}
	r := send(&e.bob, url.Values{"type": {"channel"}, "to": {"general"}, "subject": {"legacy"}, "content": {"hi"}})
	wantAPISuccess(t, r)
	sent = append(sent, uint64(r.body["id"].(float64)))
	if !slices.IsSorted(sent) {
		t.Errorf("message ids: got %v, want increasing", sent)
	}
	if got := mustUnread(t, e.st, e.alice.user, e.general); !slices.Equal(got, sent) {
		t.Errorf("alice's unread: got %v, want %v", got, sent)
	}
	if got := mustUnread(t, e.st, e.bob.user, e.general); len(got) != 0 {
		t.Errorf("sender's unread: got %v, want none", got)
	}
	if got := mustUnread(t, e.st, e.owner.user, e.general); len(got) != 0 {
		t.Errorf("non-subscriber's unread: got %v, want none", got)
	}
	// Anyone may post to a public channel, subscribed or not.
	r = send(&e.owner, url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"from outside"}})
	wantAPISuccess(t, r)
	if got := mustUnread(t, e.st, e.alice.user, e.general); len(got) != len(sent)+1 {
		t.Errorf("alice's unread after a non-subscriber's post: got %d, want %d", len(got), len(sent)+1)
	}
}

func TestSendMessage_Errors(t *testing.T) {
	e := newTestEnv(t)
	base := url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"hi"}}
	with := func(k, v string) url.Values {
		p := url.Values{}
		for key, vs := range base {
			p[key] = vs
		}
		if v == "<absent>" {
			delete(p, k)
		} else {
			p.Set(k, v)
		}
		return p
	}
	for _, c := range []struct {
		rule      string
		params    url.Values
		code, msg string
		sender    *account
	}{
		{"type is required", with("type", "<absent>"), "REQUEST_VARIABLE_MISSING", "Missing 'type' argument", nil},
		{"unknown type", with("type", "carrier-pigeon"), "BAD_REQUEST", "Invalid message type", nil},
		{"content is required", with("content", "<absent>"), "REQUEST_VARIABLE_MISSING", "Missing 'content' argument", nil},
		{"to is required", with("to", "<absent>"), "BAD_REQUEST", "Missing channel", nil},
		{"unknown channel name", with("to", "nope"), "STREAM_DOES_NOT_EXIST", "Channel 'nope' does not exist", nil},
		{"unknown channel id", with("to", "999"), "STREAM_DOES_NOT_EXIST", "Channel with ID '999' does not exist", nil},
		{"two channels", with("to", `["general","secret"]`), "BAD_REQUEST", "Expected exactly one channel", nil},
		{"channel id zero", with("to", "0"), "STREAM_DOES_NOT_EXIST", "Channel with ID '0' does not exist", nil},
		{"negative channel id", with("to", "[-5]"), "STREAM_DOES_NOT_EXIST", "Channel with ID '-5' does not exist", nil},
		{"to of the wrong type", with("to", `{"a":1}`), "BAD_REQUEST", "Invalid data type for channel", nil},
		{"topic is required", with("topic", "<absent>"), "BAD_REQUEST", "Missing topic", nil},
		{"control character in topic", with("topic", "a\x01b"), "BAD_REQUEST", "Invalid character in topic, at position 2!", nil},
		{"empty content", with("content", " \n "), "BAD_REQUEST", "Message must not be empty", nil},
		{"NUL in content", with("content", "a\x00b"), "BAD_REQUEST", "Message must not contain null bytes", nil},
		{"private channel, not subscribed", with("to", "secret"), "BAD_REQUEST", "Not authorized to send to channel 'secret'", &e.bob},
	} {
		t.Run(c.rule, func(t *testing.T) {
			sender := c.sender
			if sender == nil {
				sender = &e.alice
			}
			r := e.request(t, http.MethodPost, "/api/v1/messages", c.params, sender)
			wantAPIError(t, r, 400, c.code, c.msg)
			maxID, err := e.st.maxMessageID()
			if err != nil {
				t.Fatal(err)
			}
			if maxID != 0 {
				t.Errorf("a refused send stored a message (max id %d)", maxID)
			}
		})
	}
}

func TestSendMessage_LongTopicAndContentTruncatedAsZulipDoes(t *testing.T) {
	e := newTestEnv(t)
	r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {strings.Repeat("é", 70)}, "content": {strings.Repeat("x", 20000)}}, &e.alice)
	wantAPISuccess(t, r)
	var m message
	mustView(t, e.st, func(tx *bbolt.Tx) error { return getJSON(tx.Bucket(bucketMessages), itob(1), &m) })
	if want := strings.Repeat("é", 57) + "..."; m.Topic != want {
		t.Errorf("topic: got %d characters, want 57 and an ellipsis", len([]rune(m.Topic)))
	}
	if len(m.Content) != maxMessageLength || !strings.HasSuffix(m.Content, "\n[message truncated]") {
		t.Errorf("content: got %d bytes ending %q, want %d ending in the marker", len(m.Content), m.Content[len(m.Content)-20:], maxMessageLength)
	}
}

func TestMarkStreamAsRead(t *testing.T) {
	e := newTestEnv(t)
	mustSend(t, e.st, e.bob.user, e.general)
	mustSend(t, e.st, e.bob.user, e.general)
	secretMsg := mustSend(t, e.st, e.alice.user, e.secret)
	mark := func(a *account, id uint64) response {
		return e.requestAs(t, multipartForm, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {strconv.FormatUint(id, 10)}}, a)
	}
	for _, c := range []struct {
		rule string
		who  *account
		id   uint64
	}{
		{"unknown channel", &e.alice, 999},
		{"channel id zero", &e.alice, 0},
		{"private channel the caller is not subscribed to", &e.bob, e.secret.ID},
	} {
		wantAPIError(t, mark(c.who, c.id), 400, "BAD_REQUEST", "Invalid channel ID")
	}
	if got := mustUnread(t, e.st, e.alice.user, e.general); len(got) != 2 {
		t.Fatalf("alice's unread before: got %v, want 2", got)
	}
	wantAPISuccess(t, mark(&e.alice, e.general.ID))
	if got := mustUnread(t, e.st, e.alice.user, e.general); len(got) != 0 {
		t.Errorf("alice's unread after: got %v, want none", got)
	}
	wantAPISuccess(t, mark(&e.alice, e.general.ID)) // already read
	wantAPISuccess(t, mark(&e.owner, e.general.ID)) // public, not subscribed, nothing unread
	wantAPISuccess(t, mark(&e.alice, e.secret.ID))  // private, subscribed
	_ = secretMsg
}

func (e *testEnv) sendAs(t *testing.T, a account, ch channel, topic string) uint64 {
	t.Helper()
	sent, err := e.st.sendMessage(a.user, channelRef{ID: ch.ID}, topic, "hi", "test")
	if err != nil {
		t.Fatal(err)
	}
	return sent.ID
}

func jsonIDs(ids ...uint64) string {
	b, _ := json.Marshal(ids)
	return string(b)
}

func (e *testEnv) starred(t *testing.T, a account) []uint64 {
	t.Helper()
	var ids []uint64
	mustView(t, e.st, func(tx *bbolt.Tx) error {
		prefix := itob(a.ID)
		c := tx.Bucket(bucketFlags).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if v[0]&flagStarred != 0 {
				ids = append(ids, btoi(k[8:]))
			}
		}
		return nil
	})
	return ids
}

func TestUpdateFlags_ValidationChangesNothing(t *testing.T) {
	e := newTestEnv(t)
	m1 := e.sendAs(t, e.bob, e.general, "t")
	secret := e.sendAs(t, e.alice, e.secret, "t")
	for _, c := range []struct {
		rule, messages, op, flag string
		code, msg                string
	}{
		{"messages not JSON", "abc", "add", "read", "BAD_REQUEST", "messages is not valid JSON"},
		{"messages not a list", "7", "add", "read", "BAD_REQUEST", "messages is not a list"},
		{"an element not an integer", `[1,"a"]`, "add", "read", "BAD_REQUEST", "messages[1] is not an integer"},
		{"unknown flag", jsonIDs(m1), "add", "bogus", "BAD_REQUEST", "Invalid flag: 'bogus'"},
		{"flag the user cannot set", jsonIDs(m1), "add", "mentioned", "BAD_REQUEST", "Flag not editable: 'mentioned'"},
		{"unknown operation", jsonIDs(m1), "toggle", "read", "BAD_REQUEST", "Invalid message flag operation: 'toggle'"},
		{"a message that does not exist", jsonIDs(m1, 9999), "add", "read", "BAD_REQUEST", "Invalid message(s)"},
		{"a message in a private channel", jsonIDs(m1, secret), "add", "starred", "BAD_REQUEST", "Invalid message(s)"},
		{"message id zero", "[0]", "add", "read", "BAD_REQUEST", "Invalid message(s)"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			r := e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {c.messages}, "op": {c.op}, "flag": {c.flag}}, &e.bob)
			wantAPIError(t, r, 400, c.code, c.msg)
		})
	}
	r := e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {"[1]"}, "op": {"add"}}, &e.bob)
	wantAPIError(t, r, 400, "REQUEST_VARIABLE_MISSING", "Missing 'flag' argument")
	if got := mustUnread(t, e.st, e.alice.user, e.general); !slices.Equal(got, []uint64{m1}) {
		t.Errorf("alice's unread after refused calls: got %v, want [%d]", got, m1)
	}
	if got := e.starred(t, e.bob); len(got) != 0 {
		t.Errorf("bob's starred after refused calls: got %v, want none", got)
	}
}

func TestUpdateFlags_ReadAndStarred(t *testing.T) {
	e := newTestEnv(t)
	m1, m2, m3 := e.sendAs(t, e.bob, e.general, "a"), e.sendAs(t, e.bob, e.general, "b"), e.sendAs(t, e.bob, e.general, "a")
	flags := func(a *account, op, flag string, ids ...uint64) {
		t.Helper()
		r := e.requestAs(t, multipartForm, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(ids...)}, "op": {op}, "flag": {flag}}, a)
		wantAPISuccess(t, r)
		if got := r.body["messages"]; !reflect.DeepEqual(got, toAny(ids)) {
			t.Errorf("messages: got %v, want %v", got, ids)
		}
	}
	flags(&e.alice, "add", "read", m3, m1, m1)
	if got := mustUnread(t, e.st, e.alice.user, e.general); !slices.Equal(got, []uint64{m2}) {
		t.Errorf("after add read: got %v, want [%d]", got, m2)
	}
	flags(&e.alice, "remove", "read", m1)
	if got := mustUnread(t, e.st, e.alice.user, e.general); !slices.Equal(got, []uint64{m1, m2}) {
		t.Errorf("after remove read: got %v, want [%d %d]", got, m1, m2)
	}
	flags(&e.owner, "remove", "read", m1) // not subscribed: nothing becomes unread
	if got := mustUnread(t, e.st, e.owner.user, e.general); len(got) != 0 {
		t.Errorf("non-subscriber's unread: got %v, want none", got)
	}
	flags(&e.alice, "add", "starred", m2, m3)
	flags(&e.alice, "remove", "starred", m3)
	flags(&e.alice, "add", "collapsed", m3)
	if got := e.starred(t, e.alice); !slices.Equal(got, []uint64{m2}) {
		t.Errorf("starred: got %v, want [%d]", got, m2)
	}
	if got := e.starred(t, e.bob); len(got) != 0 {
		t.Errorf("bob's starred: got %v, want none", got)
	}
}

func toAny(ids []uint64) []any {
	out := []any{}
	for _, id := range ids {
		out = append(out, float64(id))
	}
	return out
}

func TestMarkTopicAsRead(t *testing.T) {
	e := newTestEnv(t)
	lunch1, dinner, lunch2 := e.sendAs(t, e.bob, e.general, "lunch"), e.sendAs(t, e.bob, e.general, "dinner"), e.sendAs(t, e.bob, e.general, "Lunch")
	id := strconv.FormatUint(e.general.ID, 10)
	mark := func(a *account, channelID, topic string) response {
		return e.request(t, http.MethodPost, "/api/v1/mark_topic_as_read", url.Values{"stream_id": {channelID}, "topic_name": {topic}}, a)
	}
	wantAPIError(t, mark(&e.alice, id, "nope"), 400, "BAD_REQUEST", "No such topic 'nope'")
	wantAPIError(t, mark(&e.alice, id, " lunch "), 400, "BAD_REQUEST", "No such topic ' lunch '")
	wantAPISuccess(t, mark(&e.alice, id, "")) // Zulip checks only a named topic
	wantAPIError(t, mark(&e.alice, "999", "lunch"), 400, "BAD_REQUEST", "Invalid channel ID")
	wantAPIError(t, mark(&e.bob, strconv.FormatUint(e.secret.ID, 10), "t"), 400, "BAD_REQUEST", "Invalid channel ID")
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/mark_topic_as_read", url.Values{"stream_id": {id}}, &e.alice), 400, "REQUEST_VARIABLE_MISSING", "Missing 'topic_name' argument")
	if got := mustUnread(t, e.st, e.alice.user, e.general); len(got) != 3 {
		t.Fatalf("unread after refused calls: got %v, want 3", got)
	}
	wantAPISuccess(t, mark(&e.alice, id, "LUNCH"))
	if got := mustUnread(t, e.st, e.alice.user, e.general); !slices.Equal(got, []uint64{dinner}) {
		t.Errorf("after marking lunch read: got %v, want [%d] (not %d, %d)", got, dinner, lunch1, lunch2)
	}
}

func TestMarkAllAsRead(t *testing.T) {
	e := newTestEnv(t)
	e.sendAs(t, e.bob, e.general, "a")
	e.sendAs(t, e.alice, e.general, "a")
	mustSubscribe(t, e.st, e.bob.user, "general")
	if err := e.st.addSubscriptionForTest(e.bob.user, e.secret); err != nil {
		t.Fatal(err)
	}
	e.sendAs(t, e.bob, e.secret, "s")
	r := e.request(t, http.MethodPost, "/api/v1/mark_all_as_read", nil, &e.alice)
	if want := `{"result":"success","msg":"","complete":true}` + "\n"; r.raw != want {
		t.Errorf("got %s, want %s", r.raw, want)
	}
	for _, ch := range []channel{e.general, e.secret} {
		if got := mustUnread(t, e.st, e.alice.user, ch); len(got) != 0 {
			t.Errorf("alice's unread in %s: got %v, want none", ch.Name, got)
		}
	}
	if got := mustUnread(t, e.st, e.bob.user, e.general); len(got) != 1 {
		t.Errorf("bob's unread: got %v, want his one", got)
	}
}

// sendWith posts a channel message with extra headers (a User-Agent).
func (e *testEnv) sendWith(t *testing.T, a *account, params url.Values, header map[string]string) response {
	t.Helper()
	req := buildRequest(t, urlencoded, http.MethodPost, "/api/v1/messages", params)
	req.SetBasicAuth(a.Email, a.key)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return e.do(t, req)
}

func TestSendMessage_ReadBySenderAndTheClientsName(t *testing.T) {
	e := newTestEnv(t)
	for _, c := range []struct {
		rule       string
		userAgent  string
		params     url.Values
		client     string
		senderRead bool
	}{
		{"no User-Agent: Unspecified; read for the sender whatever the client (SPEC §6)", "", nil, "Unspecified", true},
		{"the name before the version", "ZulipTerminal/0.7.0 ZulipPython/0.9.0 (Linux)", nil, "ZulipTerminal", true},
		{"a script", "curl/8.5.0", nil, "curl", true},
		{"read_by_sender=true, as the flutter app sends", "ZulipFlutter/30.0.274+1 (Android 14)", url.Values{"read_by_sender": {"true"}}, "ZulipFlutter", true},
		{"read_by_sender=false: unread for the subscribed sender", "ZulipMobile/27.0", url.Values{"read_by_sender": {"false"}}, "ZulipMobile", false},
		{"the client parameter names the client", "curl/8.5.0", url.Values{"client": {"website"}}, "website", true},
		{"a name of more than 30 characters is cut", "", url.Values{"client": {strings.Repeat("c", 40)}}, strings.Repeat("c", 30), true},
	} {
		t.Run(c.rule, func(t *testing.T) {
			p := url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"hi"}}
			for k, v := range c.params {
				p[k] = v
			}
			header := map[string]string{}
			if c.userAgent != "" {
				header["User-Agent"] = c.userAgent
			}
			r := e.sendWith(t, &e.bob, p, header)
			wantAPISuccess(t, r)
			id := uint64(r.body["id"].(float64))
			if got := slices.Contains(mustUnread(t, e.st, e.bob.user, e.general), id); got == c.senderRead {
				t.Errorf("sender's message unread for the sender: got %v, want %v", got, !c.senderRead)
			}
			if !slices.Contains(mustUnread(t, e.st, e.alice.user, e.general), id) {
				t.Errorf("the message is not unread for the other subscriber")
			}
			page, _ := e.page(t, &e.bob, rangeParams(strconv.FormatUint(id, 10), 0, 0, ""))
			if m := page.body["messages"].([]any)[0].(map[string]any); m["client"] != c.client {
				t.Errorf("client: got %v, want %q", m["client"], c.client)
			}
		})
	}
	// The sender is not subscribed: nothing becomes unread for them.
	r := e.sendWith(t, &e.owner, url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"hi"}, "read_by_sender": {"false"}}, nil)
	wantAPISuccess(t, r)
	if got := mustUnread(t, e.st, e.owner.user, e.general); len(got) != 0 {
		t.Errorf("unsubscribed sender's unread: got %v, want none", got)
	}
	r = e.sendWith(t, &e.bob, url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"hi"}, "read_by_sender": {"yes"}}, nil)
	wantAPIError(t, r, 400, "BAD_REQUEST", "read_by_sender is not valid JSON")
}

func TestSendMessage_EmptyTopicAndTheNamesThatMeanIt(t *testing.T) {
	e := newTestEnv(t)
	var empty, others []uint64
	for _, c := range []struct {
		param, topic string
		stored       string
	}{
		{"topic", "", ""},
		{"topic", "   ", ""},
		{"topic", "(no topic)", ""},
		{"topic", " general chat ", ""},
		{"subject", "general chat", ""},
		{"topic", "General Chat", "General Chat"}, // the names are compared exactly
		{"topic", "(No Topic)", "(No Topic)"},
	} {
		r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, c.param: {c.topic}, "content": {"hi"}}, &e.bob)
		wantAPISuccess(t, r)
		id := uint64(r.body["id"].(float64))
		var m message
		e.st.db.View(func(tx *bbolt.Tx) error { return getJSON(tx.Bucket(bucketMessages), itob(id), &m) })
		if m.Topic != c.stored {
			t.Errorf("%s %q: stored %q, want %q", c.param, c.topic, m.Topic, c.stored)
		}
		if c.stored == "" {
			empty = append(empty, id)
		} else {
			others = append(others, id)
		}
	}
	named := e.sendAs(t, e.bob, e.general, "named")

	subjects := func(p url.Values) map[uint64]string {
		r, _ := e.page(t, &e.alice, p)
		wantAPISuccess(t, r)
		out := map[uint64]string{}
		for _, m := range r.body["messages"].([]any) {
			mm := m.(map[string]any)
			out[uint64(mm["id"].(float64))] = mm["subject"].(string)
		}
		return out
	}
	all := rangeParams("oldest", 0, 100, "")
	if got := subjects(all); got[empty[0]] != "general chat" || got[named] != "named" {
		t.Errorf("without allow_empty_topic_name: got %v, want the empty topic shown as general chat", got)
	}
	all.Set("allow_empty_topic_name", "true")
	if got := subjects(all); got[empty[0]] != "" || got[named] != "named" {
		t.Errorf("with allow_empty_topic_name: got %v, want the empty topic as \"\"", got)
	}
	for _, c := range []struct {
		rule, narrow string
		want         []uint64
	}{
		{"topic \"\" is the empty topic", narrowOf(map[string]any{"operator": "channel", "operand": "general"}, map[string]any{"operator": "topic", "operand": ""}), empty},
		{"so is its display name", narrowOf([]string{"channel", "general"}, []string{"topic", "general chat"}), empty},
		{"without a channel too", narrowOf([]string{"topic", "general chat"}), empty},
		{"but \"(no topic)\" in a narrow is a name (matched without case)", narrowOf([]string{"topic", "(no topic)"}), others[1:]},
		{"a named topic is not the empty one", narrowOf([]string{"topic", "named"}), []uint64{named}},
	} {
		_, got := e.page(t, &e.alice, rangeParams("oldest", 0, 100, c.narrow))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.rule, got, c.want)
		}
	}
	p := rangeParams("oldest", 0, 100, narrowOf([]string{"channel", "general"}, []string{"topic", "general chat"}))
	p.Set("op", "add")
	p.Set("flag", "read")
	r := e.request(t, http.MethodPost, "/api/v1/messages/flags/narrow", p, &e.alice)
	if r.body["updated_count"] != float64(len(empty)) {
		t.Errorf("flags/narrow on general chat: got %s, want %d updated", r.raw, len(empty))
	}
	if got := mustUnread(t, e.st, e.alice.user, e.general); !slices.Equal(got, append(others, named)) {
		t.Errorf("alice's unread after marking general chat read: got %v, want the named ones %v", got, append(others, named))
	}
}

func TestCheckTopicsPolicy_ZulipsRefusals(t *testing.T) {
	for _, c := range []struct {
		policy, topic string
		msg           string
	}{
		{"inherit", "", ""}, // the realm's policy: allow_empty_topic
		{"", "x", ""},
		{"allow_empty_topic", "", ""},
		{"disable_empty_topic", "x", ""},
		{"disable_empty_topic", "", "Sending messages to the general chat is not allowed in this channel."},
		{"empty_topic_only", "", ""},
		{"empty_topic_only", "x", "Only the general chat topic is allowed in this channel."},
	} {
		err := checkTopicsPolicy(c.policy, c.topic)
		if c.msg == "" {
			if err != nil {
				t.Errorf("%s, topic %q: got %v, want it allowed", c.policy, c.topic, err)
			}
			continue
		}
		if !isRejection(err) {
			t.Errorf("%s, topic %q: got %v, want a store rejection", c.policy, c.topic, err)
			continue
		}
		rec := httptest.NewRecorder()
		writeError(rec, discardLogger(), httptest.NewRequest(http.MethodPost, "/api/v1/messages", nil), err)
		want := `{"result":"error","msg":"` + c.msg + `","empty_topic_display_name":"general chat","code":"BAD_REQUEST"}` + "\n"
		if rec.Code != 400 || rec.Body.String() != want {
			t.Errorf("%s, topic %q: got %d %s, want 400 %s", c.policy, c.topic, rec.Code, rec.Body.String(), want)
		}
	}
}

func TestGetMessages_MessageObjectIsZulips421(t *testing.T) {
	e := newTestEnv(t)
	id := e.sendAs(t, e.bob, e.general, "lunch")
	r, _ := e.page(t, &e.alice, rangeParams("oldest", 0, 10, ""))
	m := r.body["messages"].([]any)[0].(map[string]any)
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"avatar_url", "client", "content", "content_type", "display_recipient", "flags", "id", "is_me_message", "reactions",
		"recipient_id", "sender_email", "sender_full_name", "sender_id", "sender_realm_str", "stream_id", "subject", "submessages",
		"timestamp", "topic_links", "type"}
	if !slices.Equal(keys, want) {
		t.Errorf("fields: got %v, want %v", keys, want)
	}
	// A channel's recipient id is 3·(id−1)+2: stable, and apart from the
	// ids users and groups will have.
	if m["id"] != float64(id) || m["recipient_id"] != float64(3*(e.general.ID-1)+2) || m["client"] != "test" || m["avatar_url"] != nil {
		t.Errorf("got id %v recipient_id %v client %v avatar_url %v", m["id"], m["recipient_id"], m["client"], m["avatar_url"])
	}
	for _, list := range []string{"reactions", "submessages", "topic_links"} {
		if l, ok := m[list].([]any); !ok || len(l) != 0 {
			t.Errorf("%s: got %v, want []", list, m[list])
		}
	}
	if recipientID(recipientChannel, e.general.ID) == recipientID(recipientChannel, e.secret.ID) || recipientID(1, 2) == recipientID(recipientChannel, 1) {
		t.Errorf("recipient ids collide")
	}
	for k, v := range map[string]any{"result": "success", "anchor": 0.0, "found_anchor": false, "found_oldest": true, "found_newest": true, "history_limited": false} {
		if r.body[k] != v {
			t.Errorf("%s: got %v, want %v", k, r.body[k], v)
		}
	}
}

func TestUpdateFlags_AlwaysAnswerTheIgnoredChannels(t *testing.T) {
	e := newTestEnv(t)
	id := e.sendAs(t, e.bob, e.general, "t")
	for _, c := range []struct {
		who     *account
		op      string
		flag    string
		ignored []uint64
	}{
		{&e.alice, "add", "read", []uint64{}},
		{&e.alice, "add", "starred", []uint64{}},
		{&e.alice, "remove", "read", []uint64{}},
		{&e.owner, "remove", "read", []uint64{e.general.ID}}, // not subscribed
		{&e.owner, "add", "starred", []uint64{}},
	} {
		r := e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(id)}, "op": {c.op}, "flag": {c.flag}}, c.who)
		wantAPISuccess(t, r)
		if got, ok := r.body["ignored_because_not_subscribed_channels"]; !ok || !jsonEqual(got, c.ignored) {
			t.Errorf("flags %s %s by %s: got %s, want ignored_because_not_subscribed_channels %v", c.op, c.flag, c.who.Email, r.raw, c.ignored)
		}
		p := rangeParams("oldest", 0, 10, "[]")
		p.Set("op", c.op)
		p.Set("flag", c.flag)
		if c.who == &e.owner {
			p.Set("narrow", narrowOf([]string{"channel", "general"}))
		}
		r = e.request(t, http.MethodPost, "/api/v1/messages/flags/narrow", p, c.who)
		wantAPISuccess(t, r)
		for _, k := range []string{"processed_count", "updated_count", "first_processed_id", "last_processed_id", "found_oldest", "found_newest"} {
			if _, ok := r.body[k]; !ok {
				t.Errorf("flags/narrow lacks %s: %s", k, r.raw)
			}
		}
		if got, ok := r.body["ignored_because_not_subscribed_channels"]; !ok || !jsonEqual(got, c.ignored) {
			t.Errorf("flags/narrow %s %s by %s: got %s, want ignored_because_not_subscribed_channels %v", c.op, c.flag, c.who.Email, r.raw, c.ignored)
		}
	}
}

func TestUnreadTopicsShown_ZulipsAggregation(t *testing.T) {
	summary := []unreadTopic{
		{ChannelID: 2, Topic: "lunch", IDs: []uint64{5}},
		{ChannelID: 1, Topic: "Lunch", IDs: []uint64{3, 9}},
		{ChannelID: 1, Topic: "", IDs: []uint64{4}},
		{ChannelID: 1, Topic: "LUNCH", IDs: []uint64{1}},
		{ChannelID: 1, Topic: "General Chat", IDs: []uint64{2}},
		{ChannelID: 1, Topic: "apple", IDs: []uint64{7}},
	}
	legacy := []unreadTopic{
		{ChannelID: 1, Topic: "apple", IDs: []uint64{7}},
		{ChannelID: 1, Topic: "General Chat", IDs: []uint64{2, 4}}, // "" and "General Chat" are one topic to it, named by id 2
		{ChannelID: 1, Topic: "LUNCH", IDs: []uint64{1, 3, 9}},     // the name of the oldest
		{ChannelID: 2, Topic: "lunch", IDs: []uint64{5}},
	}
	if got := unreadTopicsShown(summary, false); !reflect.DeepEqual(got, legacy) {
		t.Errorf("without empty_topic_name: got %v, want %v", got, legacy)
	}
	capable := []unreadTopic{
		{ChannelID: 1, Topic: "", IDs: []uint64{4}},
		{ChannelID: 1, Topic: "apple", IDs: []uint64{7}},
		{ChannelID: 1, Topic: "General Chat", IDs: []uint64{2}},
		{ChannelID: 1, Topic: "LUNCH", IDs: []uint64{1, 3, 9}},
		{ChannelID: 2, Topic: "lunch", IDs: []uint64{5}},
	}
	if got := unreadTopicsShown(summary, true); !reflect.DeepEqual(got, capable) {
		t.Errorf("with empty_topic_name: got %v, want %v", got, capable)
	}
}

// GET /messages/{id} answers the message as GET /messages shows it, with
// the caller's flags, and its raw Markdown (zulip-terminal reads it
// before an edit); a message the caller may not read is "Invalid
// message(s)".
func TestGetMessage_RawContentAndTheCallersView(t *testing.T) {
	e := newTestEnv(t)
	r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"lunch"}, "content": {"**pizza**?"}}, &e.alice)
	wantAPISuccess(t, r)
	id := strconv.Itoa(int(r.body["id"].(float64)))
	r = e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"secret"}, "topic": {"plans"}, "content": {"shh"}}, &e.alice)
	wantAPISuccess(t, r)
	secret := strconv.Itoa(int(r.body["id"].(float64)))

	r = e.request(t, http.MethodGet, "/api/v1/messages/"+id, nil, &e.bob)
	wantAPISuccess(t, r)
	m := r.body["message"].(map[string]any)
	if r.body["raw_content"] != "**pizza**?" || m["content"] != "<p><strong>pizza</strong>?</p>" || m["subject"] != "lunch" || fmt.Sprint(m["flags"]) != "[]" {
		t.Errorf("bob's view: got raw %v, message %v", r.body["raw_content"], m)
	}
	r = e.request(t, http.MethodGet, "/api/v1/messages/"+id, url.Values{"apply_markdown": {"false"}}, &e.alice)
	wantAPISuccess(t, r)
	if m := r.body["message"].(map[string]any); m["content"] != "**pizza**?" || fmt.Sprint(m["flags"]) != "[read]" {
		t.Errorf("alice's view without Markdown: got %v", m)
	}
	for _, path := range []string{"/api/v1/messages/" + secret, "/api/v1/messages/999999"} {
		wantAPIError(t, e.request(t, http.MethodGet, path, nil, &e.bob), http.StatusBadRequest, "BAD_REQUEST", "Invalid message(s)")
	}
}

func TestMarkdown_MessagesAreRenderedWhenSentAndShownAsAsked(t *testing.T) {
	e := newTestEnv(t)
	r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"},
		"content": {"/me waves **hello** :octopus:"}}, &e.alice)
	wantAPISuccess(t, r)
	id := uint64(r.body["id"].(float64))
	// A message stored before zulite rendered Markdown has no rendering:
	// it is rendered when read.
	old := message{ID: 9000, SenderID: e.alice.ID, ChannelID: e.general.ID, Topic: "t", Content: "an *old* one", Timestamp: 1}
	mustUpdate(t, e.st, func(tx *bbolt.Tx) error {
		if err := putJSON(tx.Bucket(bucketMessages), itob(old.ID), old); err != nil {
			return err
		}
		return indexMessage(tx, old)
	})
	get := func(markdown string, anchor uint64) map[string]any {
		page := e.request(t, http.MethodGet, "/api/v1/messages", url.Values{"anchor": {strconv.FormatUint(anchor, 10)}, "num_before": {"0"},
			"num_after": {"0"}, "apply_markdown": {markdown}}, &e.alice)
		wantAPISuccess(t, page)
		return page.body["messages"].([]any)[0].(map[string]any)
	}
	octopus := `<span aria-label="octopus" class="emoji emoji-1f419" role="img" title="octopus">:octopus:</span>`
	for _, c := range []struct {
		markdown     string
		id           uint64
		content, typ string
		me           bool
	}{
		{"true", id, "<p>/me waves <strong>hello</strong> " + octopus + "</p>", "text/html", true},
		{"false", id, "/me waves **hello** :octopus:", "text/x-markdown", true},
		{"true", old.ID, "<p>an <em>old</em> one</p>", "text/html", false},
	} {
		m := get(c.markdown, c.id)
		if m["content"] != c.content || m["content_type"] != c.typ || m["is_me_message"] != c.me {
			t.Errorf("apply_markdown=%s, message %d: got %q %v is_me_message %v, want %q %s %v", c.markdown, c.id, m["content"], m["content_type"], m["is_me_message"], c.content, c.typ, c.me)
		}
	}
}

// TestMarkdown_EmoticonsAndGlobalTimesAsZulipRendersThem: a message is
// rendered with its sender's translate_emoticons setting, when sent and
// when its content is edited (render_message_markdown reads the
// sender's), and a global time becomes its <time> element.
func TestMarkdown_EmoticonsAndGlobalTimesAsZulipRendersThem(t *testing.T) {
	e := newTestEnv(t)
	send := func(u *account, content string) uint64 {
		r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"},
			"content": {content}}, u)
		wantAPISuccess(t, r)
		return uint64(r.body["id"].(float64))
	}
	rendered := func(id uint64) string {
		r := e.request(t, http.MethodGet, "/api/v1/messages/"+strconv.FormatUint(id, 10), nil, &e.alice)
		wantAPISuccess(t, r)
		return r.body["message"].(map[string]any)["content"].(string)
	}
	smile := `<span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">:smile:</span>`
	frown := `<span aria-label="frown" class="emoji emoji-1f641" role="img" title="frown">:frown:</span>`
	before := send(&e.alice, ":) hi")
	if got := rendered(before); got != "<p>:) hi</p>" {
		t.Errorf("before translate_emoticons: got %q", got)
	}
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"translate_emoticons": {"true"}}, &e.alice))
	after := send(&e.alice, ":) hi")
	if got, want := rendered(after), "<p>"+smile+" hi</p>"; got != want {
		t.Errorf("with translate_emoticons: got %q, want %q", got, want)
	}
	if got := rendered(before); got != "<p>:) hi</p>" {
		t.Errorf("a message sent before the setting changed is rendered again: %q", got)
	}
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/messages/"+strconv.FormatUint(before, 10), url.Values{"content": {":( edited"}}, &e.alice))
	if got, want := rendered(before), "<p>"+frown+" edited</p>"; got != want {
		t.Errorf("edited with translate_emoticons: got %q, want %q", got, want)
	}
	if got := rendered(send(&e.bob, ":) from bob")); got != "<p>:) from bob</p>" {
		t.Errorf("bob, without the setting: got %q", got)
	}
	if got, want := rendered(send(&e.bob, "at <time:2017-06-05T22:30:00+05:30>, or <time:soon>")),
		`<p>at <time datetime="2017-06-05T17:00:00Z">2017-06-05T22:30:00+05:30</time>, or <span class="timestamp-error">Invalid time format: soon</span></p>`; got != want {
		t.Errorf("global times: got %q, want %q", got, want)
	}
}
