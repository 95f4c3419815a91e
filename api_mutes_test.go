package main

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"zulite/internal/markdown"
)

// mutedIDs reads a muted_users list (register's or the event's) as ids.
func mutedIDs(t *testing.T, v any) []uint64 {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("muted_users: got %v, want a list", v)
	}
	var ids []uint64
	for _, m := range list {
		o := object(m)
		if _, ok := o["timestamp"].(float64); !ok {
			t.Errorf("muted user %v has no timestamp", o)
		}
		ids = append(ids, uint64(o["id"].(float64)))
	}
	return ids
}

func TestMutedUsers_MuteUnmuteEventsAndRegister(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["muted_users"]`}}).str("queue_id")
	path := func(id uint64) string { return "/api/v1/users/me/muted_users/" + strconv.FormatUint(id, 10) }
	wantAPISuccess(t, e.request(t, http.MethodPost, path(e.alice.ID), nil, &e.bob))
	got := e.pollNow(t, &e.bob, queue, -1)
	if len(got) != 1 || got[0]["type"] != "muted_users" || !slices.Equal(mutedIDs(t, got[0]["muted_users"]), []uint64{e.alice.ID}) {
		t.Fatalf("bob's queue after muting alice: %v", got)
	}
	// A bot may be muted too (allow_bots).
	wantAPISuccess(t, e.request(t, http.MethodPost, path(e.bot.ID), nil, &e.bob))
	got = e.pollNow(t, &e.bob, queue, 0)
	if len(got) != 1 || !slices.Equal(mutedIDs(t, got[0]["muted_users"]), []uint64{e.alice.ID, e.bot.ID}) {
		t.Fatalf("bob's queue after muting the bot: %v", got)
	}
	for _, c := range []struct {
		rule   string
		method string
		id     uint64
		msg    string
	}{
		{"not oneself", http.MethodPost, e.bob.ID, "Cannot mute self"},
		{"not twice", http.MethodPost, e.alice.ID, "User already muted"},
		{"only someone", http.MethodPost, 987654, "No such user"},
		{"unmute only the muted", http.MethodDelete, e.owner.ID, "User is not muted"},
		{"unmute only someone", http.MethodDelete, 987654, "No such user"},
	} {
		wantAPIError(t, e.request(t, c.method, path(c.id), nil, &e.bob), http.StatusBadRequest, "BAD_REQUEST", c.msg)
	}
	r := e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["muted_users"]`}})
	if ids := mutedIDs(t, r.body["muted_users"]); !slices.Equal(ids, []uint64{e.alice.ID, e.bot.ID}) {
		t.Errorf("register after the refusals: got %v, want alice and the bot", ids)
	}
	if got := e.pollNow(t, &e.bob, queue, 1); len(got) != 0 {
		t.Errorf("refusals told bob's queue: %v", got)
	}
	// One's mutes are one's own.
	r = e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {`["muted_users"]`}})
	if ids := mutedIDs(t, r.body["muted_users"]); len(ids) != 0 {
		t.Errorf("alice's muted_users: %v", ids)
	}
	wantAPISuccess(t, e.request(t, http.MethodDelete, path(e.alice.ID), nil, &e.bob))
	got = e.pollNow(t, &e.bob, queue, 1)
	if len(got) != 1 || !slices.Equal(mutedIDs(t, got[0]["muted_users"]), []uint64{e.bot.ID}) {
		t.Fatalf("bob's queue after unmuting alice: %v", got)
	}
	r = e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["muted_users"]`}})
	if ids := mutedIDs(t, r.body["muted_users"]); !slices.Equal(ids, []uint64{e.bot.ID}) {
		t.Errorf("register after unmuting: got %v, want the bot", ids)
	}
}

// myFlags is the caller's flags on one message, as GET /messages/{id}
// answers them.
func myFlags(t *testing.T, e *testEnv, who *account, id uint64) []string {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/messages/"+strconv.FormatUint(id, 10), nil, who)
	wantAPISuccess(t, r)
	var flags []string
	for _, f := range object(r.body["message"])["flags"].([]any) {
		flags = append(flags, f.(string))
	}
	return flags
}

func TestMutedUsers_TheirMessagesArriveRead(t *testing.T) {
	e := newTestEnv(t)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/muted_users/"+strconv.FormatUint(e.alice.ID, 10), nil, &e.bob))
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["message"]`}}).str("queue_id")
	ownerQueue := e.registerQueue(t, &e.owner, url.Values{"event_types": {`["message"]`}}).str("queue_id")
	mustSubscribe(t, e.st, e.owner.user, "general")
	r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"hi @**bob**"}}, &e.alice)
	wantAPISuccess(t, r)
	channelMsg := uint64(r.body["id"].(float64))
	r = e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"direct"}, "to": {"[" + strconv.FormatUint(e.bob.ID, 10) + "]"}, "content": {"psst"}}, &e.alice)
	wantAPISuccess(t, r)
	directMsg := uint64(r.body["id"].(float64))
	for _, id := range []uint64{channelMsg, directMsg} {
		if flags := myFlags(t, e, &e.bob, id); !slices.Contains(flags, "read") {
			t.Errorf("bob muted alice, but her message %d is unread for him: %v", id, flags)
		}
	}
	if flags := myFlags(t, e, &e.owner, channelMsg); slices.Contains(flags, "read") {
		t.Errorf("the owner muted nobody, but alice's message is read for them: %v", flags)
	}
	got := e.pollNow(t, &e.bob, queue, -1)
	if len(got) != 2 {
		t.Fatalf("bob's queue: %v", got)
	}
	for _, ev := range got {
		flags := ev["flags"].([]any)
		if !slices.Contains(flags, any("read")) {
			t.Errorf("bob's message event has flags %v, want read among them", flags)
		}
	}
	if got := e.pollNow(t, &e.owner, ownerQueue, -1); len(got) != 1 || slices.Contains(got[0]["flags"].([]any), any("read")) {
		t.Errorf("the owner's queue: %v, want the channel message unread", got)
	}
	reg := e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["message","update_message_flags"]`}})
	if n := object(reg.body["unread_msgs"])["count"]; n != float64(0) {
		t.Errorf("bob's unread count: %v, want 0", n)
	}
}

func TestMutedUsers_MutingMarksTheirMessagesRead(t *testing.T) {
	e := newTestEnv(t)
	from := func(who account, content string) uint64 {
		r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {content}}, &who)
		wantAPISuccess(t, r)
		return uint64(r.body["id"].(float64))
	}
	a1, o1, a2 := from(e.alice, "one"), from(e.owner, "two"), from(e.alice, "three")
	mustSubscribe(t, e.st, e.owner.user, "general")
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["update_message_flags"]`}}).str("queue_id")
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/muted_users/"+strconv.FormatUint(e.alice.ID, 10), nil, &e.bob))
	for id, read := range map[uint64]bool{a1: true, o1: false, a2: true} {
		if got := slices.Contains(myFlags(t, e, &e.bob, id), "read"); got != read {
			t.Errorf("message %d read for bob: %v, want %v", id, got, read)
		}
	}
	got := e.pollNow(t, &e.bob, queue, -1)
	if len(got) != 1 || got[0]["flag"] != "read" || got[0]["op"] != "add" || !jsonEqual(got[0]["messages"], []any{float64(a1), float64(a2)}) {
		t.Errorf("bob's queue after muting: %v", got)
	}
}

func TestAlertWords_AddListRemoveEventsAndRegister(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["alert_words"]`}}).str("queue_id")
	r := e.request(t, http.MethodPost, "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["  Lunch ", "", "coffee", "LUNCH"]`}}, &e.bob)
	wantAPISuccess(t, r)
	want := []any{"LUNCH", "coffee"}
	if !jsonEqual(r.body["alert_words"], want) {
		t.Errorf("POST answered %v, want %v", r.body["alert_words"], want)
	}
	got := e.pollNow(t, &e.bob, queue, -1)
	if len(got) != 1 || got[0]["type"] != "alert_words" || !jsonEqual(got[0]["alert_words"], want) {
		t.Errorf("bob's queue: %v", got)
	}
	// A word already there, in any case, is not added again.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["Coffee", "tea"]`}}, &e.bob))
	want = []any{"LUNCH", "coffee", "tea"}
	r = e.request(t, http.MethodGet, "/api/v1/users/me/alert_words", nil, &e.bob)
	wantAPISuccess(t, r)
	if !jsonEqual(r.body["alert_words"], want) {
		t.Errorf("GET: %v, want %v", r.body["alert_words"], want)
	}
	for _, c := range []struct {
		rule   string
		method string
		params url.Values
		msg    string
	}{
		{"words are required", http.MethodPost, nil, "Missing 'alert_words' argument"},
		{"a JSON list", http.MethodPost, url.Values{"alert_words": {`"lunch"`}}, "alert_words is not a list"},
		{"of strings", http.MethodPost, url.Values{"alert_words": {`["a", 1]`}}, "alert_words[1] is not a string"},
		{"of at most 100 characters", http.MethodPost, url.Values{"alert_words": {`["a", "` + strings.Repeat("é", 101) + `"]`}}, "alert_words[1] is too long (limit: 100 characters)"},
		{"removal needs words", http.MethodDelete, nil, "Missing 'alert_words' argument"},
		{"removal takes strings", http.MethodDelete, url.Values{"alert_words": {`[true]`}}, "alert_words[0] is not a string"},
	} {
		code := "BAD_REQUEST"
		if c.params == nil {
			code = "REQUEST_VARIABLE_MISSING"
		}
		wantAPIError(t, e.request(t, c.method, "/api/v1/users/me/alert_words", c.params, &e.bob), http.StatusBadRequest, code, c.msg)
	}
	r = e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["alert_words"]`}})
	if !jsonEqual(r.body["alert_words"], want) {
		t.Errorf("register after the refusals: %v, want %v", r.body["alert_words"], want)
	}
	r = e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {`["alert_words"]`}})
	if !jsonEqual(r.body["alert_words"], []any{}) {
		t.Errorf("alice's alert_words: %v", r.body["alert_words"])
	}
	// Removal is case-insensitive; a word not there is no error.
	r = e.request(t, http.MethodDelete, "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["lunch", "nothing"]`}}, &e.bob)
	wantAPISuccess(t, r)
	want = []any{"coffee", "tea"}
	if !jsonEqual(r.body["alert_words"], want) {
		t.Errorf("DELETE answered %v, want %v", r.body["alert_words"], want)
	}
	got = e.pollNow(t, &e.bob, queue, 0)
	if len(got) != 2 || !jsonEqual(got[1]["alert_words"], want) {
		t.Errorf("bob's queue after removing: %v", got)
	}
}

func TestAlertWords_MessagesGetTheFlag(t *testing.T) {
	e := newTestEnv(t)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["lunch", "big deal"]`}}, &e.bob))
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["message"]`}}).str("queue_id")
	send := func(content string) uint64 {
		r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {content}}, &e.alice)
		wantAPISuccess(t, r)
		return uint64(r.body["id"].(float64))
	}
	for content, want := range map[string]bool{
		"Who wants LUNCH?": true, "(lunch)": true, "a BIG deal.": true, "lunch": true,
		"lunches": false, "brunch": false, "lunch-time": false, "big  deal": false,
		"```\nlunch\n```": false, // Zulip reads for alert words after stashing fenced code
	} {
		id := send(content)
		if got := slices.Contains(myFlags(t, e, &e.bob, id), "has_alert_word"); got != want {
			t.Errorf("%q: has_alert_word for bob %v, want %v", content, got, want)
		}
		if slices.Contains(myFlags(t, e, &e.alice, id), "has_alert_word") {
			t.Errorf("%q: alice has no alert words, but has the flag", content)
		}
	}
	got := e.pollNow(t, &e.bob, queue, -1)
	n := 0
	for _, ev := range got {
		if slices.Contains(ev["flags"].([]any), any("has_alert_word")) {
			n++
		}
	}
	if n != 4 {
		t.Errorf("bob's message events with has_alert_word: %d, want 4 (%v)", n, got)
	}
	// A direct message too.
	r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"direct"}, "to": {"[" + strconv.FormatUint(e.bob.ID, 10) + "]"}, "content": {"lunch?"}}, &e.alice)
	wantAPISuccess(t, r)
	if flags := myFlags(t, e, &e.bob, uint64(r.body["id"].(float64))); !slices.Contains(flags, "has_alert_word") {
		t.Errorf("the direct message's flags for bob: %v", flags)
	}
}

func TestAlertWords_AnEditSetsAndClearsTheFlag(t *testing.T) {
	e := newTestEnv(t)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["lunch"]`}}, &e.bob))
	id := e.sendAs(t, e.alice, e.general, "hello")
	path := "/api/v1/messages/" + strconv.FormatUint(id, 10)
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["update_message","update_message_flags"]`}}).str("queue_id")
	for i, c := range []struct {
		content string
		want    bool
	}{{"lunch?", true}, {"no more", false}} {
		wantAPISuccess(t, e.request(t, http.MethodPatch, path, url.Values{"content": {c.content}}, &e.alice))
		if got := slices.Contains(myFlags(t, e, &e.bob, id), "has_alert_word"); got != c.want {
			t.Errorf("edited to %q: has_alert_word %v, want %v", c.content, got, c.want)
		}
		got := e.pollNow(t, &e.bob, queue, i-1)
		if len(got) != 1 || slices.Contains(got[0]["flags"].([]any), any("has_alert_word")) != c.want {
			t.Errorf("edited to %q: bob's update_message event %v", c.content, got)
		}
	}
	// Emptying one's list keeps one among those an edit looks at.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["hello"]`}}, &e.owner))
	mustSubscribe(t, e.st, e.owner.user, "general")
	id = e.sendAs(t, e.alice, e.general, "hello")
	wantAPISuccess(t, e.request(t, http.MethodDelete, "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["hello"]`}}, &e.owner))
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/messages/"+strconv.FormatUint(id, 10), url.Values{"content": {"hello again"}}, &e.alice))
	if slices.Contains(myFlags(t, e, &e.owner, id), "has_alert_word") {
		t.Errorf("the owner removed the word, but the edited message keeps has_alert_word")
	}
}

func TestAlertWords_FoundAsZulipFindsThem(t *testing.T) {
	for _, c := range []struct {
		content, word string
		want          bool
	}{
		{"lunch", "lunch", true},
		{"who wants lunch?", "lunch", true},
		{"[lunch]", "lunch", true},
		{"`lunch`", "lunch", true},
		{"> lunch!", "lunch", true},
		{"lunch-time", "lunch", false},
		{"brunch", "lunch", false},
		{"lunches", "lunch", false},
		{`"lunch"`, "lunch", false}, // '",' is two characters in allowed_after_punctuation
		{`"lunch",`, "lunch", false},
		{"xlunch", "lunch", true}, // Zulip's start check lets anything at index 0 through
		{"a\tlunch", "lunch", true},
		{"big deal", "big deal", true},
		{"", "lunch", false},
		// The preprocessor runs after the fenced blocks' (priority 20,
		// after 25): a fenced code block is stashed HTML by then, a quote
		// or a spoiler still text; indented code is the block parser's,
		// later.
		{"```\nlunch\n```", "lunch", false},
		{"~~~ python\nlunch\n~~~", "lunch", false},
		{"```math\nlunch\n```", "lunch", false},
		{"````quote\nsay\n```\nlunch\n```\n````", "lunch", false}, // code in a quote
		{"lunch\n```\ncode\n```", "lunch", true},
		{"```quote\nlunch\n```", "lunch", true},
		{"```spoiler menu\nlunch\n```", "lunch", true},
		{"    lunch", "lunch", true},
	} {
		r, err := markdown.Render(c.content, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := alertWordIn([]rune(strings.ToLower(r.AlertText)), []rune(c.word)); got != c.want {
			t.Errorf("%q in %q: %v, want %v", c.word, c.content, got, c.want)
		}
	}
}

func TestAlertWords_ListIsBounded(t *testing.T) {
	e := newTestEnv(t)
	words := make([]string, maxAlertWords)
	for i := range words {
		words[i] = `"w` + strconv.Itoa(i) + `"`
	}
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/alert_words", url.Values{"alert_words": {"[" + strings.Join(words, ",") + "]"}}, &e.bob))
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["one more"]`}}, &e.bob),
		http.StatusBadRequest, "BAD_REQUEST", "You may have at most 1000 alert words.")
	// A word already there is no new word.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["W0"]`}}, &e.bob))
	r := e.request(t, http.MethodGet, "/api/v1/users/me/alert_words", nil, &e.bob)
	if n := len(r.body["alert_words"].([]any)); n != maxAlertWords {
		t.Errorf("after the refusal bob has %d words, want %d", n, maxAlertWords)
	}
}

// Muting someone with more unread messages than one commit marks
// (maxMessagesPerRequest) marks them all read, a bounded commit at a
// time, with the mute in the first.
func TestMutedUsers_MutingMarksManyUnreadReadInBoundedCommits(t *testing.T) {
	e := newTestEnv(t)
	const n = 2*maxMessagesPerRequest + 123
	seedChannel(t, e.st, e.alice.user, e.bob.user, e.general, n, 10)
	count := func() any {
		reg := e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["message","update_message_flags"]`}})
		return object(reg.body["unread_msgs"])["count"]
	}
	if got := count(); got != float64(n) {
		t.Fatalf("bob's unread before muting: %v, want %d", got, n)
	}
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["update_message_flags"]`}}).str("queue_id")
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/muted_users/"+strconv.FormatUint(e.alice.ID, 10), nil, &e.bob))
	if got := count(); got != float64(0) {
		t.Errorf("bob's unread after muting alice: %v, want 0", got)
	}
	marked := 0
	for _, ev := range e.pollNow(t, &e.bob, queue, -1) {
		marked += len(ev["messages"].([]any))
	}
	if marked != n {
		t.Errorf("read events after muting: %d messages, want %d", marked, n)
	}
}
