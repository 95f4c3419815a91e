package main

// POST /submessage and the /poll and /todo widgets, as Zulip's
// zerver/tests/test_widgets.py and test_submessage.py hold them.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/bbolt"
)

const submessagePath = "/api/v1/submessage"

// submessagesOf is a message's submessages as GET /messages/{id} shows
// them to a.
func (e *testEnv) submessagesOf(t *testing.T, a *account, id uint64) []any {
	t.Helper()
	r := e.request(t, http.MethodGet, msgPath(id), nil, a)
	wantAPISuccess(t, r)
	m, _ := r.body["message"].(map[string]any)
	list, ok := m["submessages"].([]any)
	if !ok {
		t.Fatalf("message %d: submessages is %v", id, m["submessages"])
	}
	return list
}

// postSubmessage posts a submessage of type widget to a message as a.
func (e *testEnv) postSubmessage(t *testing.T, a *account, id uint64, content string) response {
	t.Helper()
	return e.request(t, http.MethodPost, submessagePath, url.Values{"message_id": {strconv.FormatUint(id, 10)}, "msg_type": {"widget"}, "content": {content}}, a)
}

// sendToGeneral sends content to general's topic "polls" as a, through
// the API, and answers the message's id.
func (e *testEnv) sendToGeneral(t *testing.T, a *account, content string) uint64 {
	t.Helper()
	r := e.sendContent(t, a, "polls", content)
	wantAPISuccess(t, r)
	id, _ := r.body["id"].(float64)
	return uint64(id)
}

// wantSubmessages compares a message's submessages with want, each
// {sender, msg_type, content}; their ids must rise.
func wantSubmessages(t *testing.T, what string, got []any, messageID uint64, want [][3]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d submessages %v, want %d", what, len(got), got, len(want))
		return
	}
	last := 0.0
	for i, g := range got {
		s, _ := g.(map[string]any)
		id, _ := s["id"].(float64)
		if id <= last {
			t.Errorf("%s: submessage %d has id %v, after %v", what, i, s["id"], last)
		}
		last = id
		w := map[string]any{"id": s["id"], "message_id": float64(messageID), "sender_id": float64(want[i][0].(uint64)),
			"msg_type": want[i][1], "content": want[i][2]}
		if !jsonEqual(s, w) {
			t.Errorf("%s: submessage %d:\n got %v\nwant %v", what, i, s, w)
		}
	}
}

// TestWidgets_SlashCommandsMakeTheFirstSubmessage: a message whose
// content starts with /poll or /todo gets the widget as its first
// submessage, its content what Zulip's get_widget_data and json.dumps
// make of the text (zerver/lib/widget.py); any other message gets none.
func TestWidgets_SlashCommandsMakeTheFirstSubmessage(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["message"]`}}).str("queue_id")
	for _, c := range []struct{ content, widget string }{
		// test_widgets.py's cases.
		{"/poll What is your favorite color?\n\nRed\nGreen  \n\n   Blue\n - Yellow",
			`{"widget_type": "poll", "extra_data": {"question": "What is your favorite color?", "options": ["Red", "Green", "Blue", "Yellow"]}}`},
		{"/poll", `{"widget_type": "poll", "extra_data": {"question": "", "options": []}}`},
		{"/todo", `{"widget_type": "todo", "extra_data": {"task_list_title": "", "tasks": []}}`},
		{"/todo Example Task List Title", `{"widget_type": "todo", "extra_data": {"task_list_title": "Example Task List Title", "tasks": []}}`},
		{"/todo Example Task List Title\n\n    task without description\ntask: with description    \n\n - task as list : also with description",
			`{"widget_type": "todo", "extra_data": {"task_list_title": "Example Task List Title", "tasks": [{"task": "task without description", "desc": ""}, {"task": "task", "desc": "with description"}, {"task": "task as list", "desc": "also with description"}]}}`},
		{"/todo   School Work", `{"widget_type": "todo", "extra_data": {"task_list_title": "School Work", "tasks": []}}`},
		{"/todo School Work\nchemistry homework: assignment 2\nstudy for english test: pages 56-67",
			`{"widget_type": "todo", "extra_data": {"task_list_title": "School Work", "tasks": [{"task": "chemistry homework", "desc": "assignment 2"}, {"task": "study for english test", "desc": "pages 56-67"}]}}`},
		{"/todo\nTask", `{"widget_type": "todo", "extra_data": {"task_list_title": "", "tasks": [{"task": "Task", "desc": ""}]}}`},
		// Python's json.dumps escapes all but printable ASCII, a character
		// beyond the BMP as a surrogate pair; its list markers go once.
		{"/poll Café \"au lait\"? ☕\n- oui\n* 🍰\n--non\n*", `{"widget_type": "poll", "extra_data": {"question": "Caf\u00e9 \"au lait\"? \u2615", "options": ["oui", "\ud83c\udf70", "-non"]}}`},
		// Python's \s and str.strip know Unicode's white space; leading
		// blank lines go before the command is looked for (normalize_body).
		{"/poll\u00a0Q\u2028A", `{"widget_type": "poll", "extra_data": {"question": "Q", "options": ["A"]}}`},
		{"\n\n/todo T", `{"widget_type": "todo", "extra_data": {"task_list_title": "T", "tasks": []}}`},
		{"/poll\r\nQ\r\nA\vB", `{"widget_type": "poll", "extra_data": {"question": "", "options": ["Q", "A", "B"]}}`},
		// Not widgets (test_get_widget_data_for_non_widget_messages).
		{"this is an ordinary message", ""},
		{"/bogus_command", ""},
		{"/me shrugs", ""},
		{"use /poll", ""},
		{"/polls", ""},
		{"/Poll", ""},
		{" /poll Q", ""},
	} {
		id := e.sendToGeneral(t, &e.alice, c.content)
		var want [][3]any
		if c.widget != "" {
			want = [][3]any{{e.alice.ID, "widget", c.widget}}
		}
		wantSubmessages(t, "GET /messages/{id} of "+strconv.Quote(c.content), e.submessagesOf(t, &e.bob, id), id, want)
		events := e.eventsOfType(t, &e.bob, queue, "message")
		if len(events) == 0 {
			t.Fatalf("%q: no message event", c.content)
		}
		m, _ := events[len(events)-1]["message"].(map[string]any)
		got, _ := m["submessages"].([]any)
		wantSubmessages(t, "the message event of "+strconv.Quote(c.content), got, id, want)
	}
	// GET /messages shows them too, and a direct message gets its widget.
	direct := e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "/todo Groceries\nmilk: 2%")
	list := e.messagesAs(t, &e.bob, `[["dm","`+e.alice.Email+`"]]`)
	if len(list) != 1 || list[0]["id"] != float64(direct) {
		t.Fatalf("GET /messages of the direct message: got %v", list)
	}
	wantSubmessages(t, "GET /messages of a direct /todo", list[0]["submessages"].([]any), direct,
		[][3]any{{e.alice.ID, "widget", `{"widget_type": "todo", "extra_data": {"task_list_title": "Groceries", "tasks": [{"task": "milk", "desc": "2%"}]}}`}})
}

// TestSubmessage_StoredInOrderAndToldToWhoSeesTheMessage: POST
// /submessage keeps the content as sent, after the message's others,
// and tells the message's audience (its channel's subscribers and the
// actor) with a submessage event; queues that did not ask for the type
// and users outside hear nothing.
func TestSubmessage_StoredInOrderAndToldToWhoSeesTheMessage(t *testing.T) {
	e := newTestEnv(t)
	id := e.sendToGeneral(t, &e.alice, "/poll Lunch?\npizza\nsushi")
	alice := e.registerQueue(t, &e.alice, nil).str("queue_id")
	bob := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["submessage"]`}}).str("queue_id")
	bobMessages := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["message"]`}}).str("queue_id")
	owner := e.registerQueue(t, &e.owner, nil).str("queue_id")

	vote := `{"type":"vote","key":"canned,0","vote":1}`
	option := `{"type": "new_option", "idx": 1, "option": "tacos"}` // kept as sent, spaces and all
	wantAPISuccess(t, e.postSubmessage(t, &e.bob, id, vote))
	wantAPISuccess(t, e.postSubmessage(t, &e.alice, id, option))
	widget := `{"widget_type": "poll", "extra_data": {"question": "Lunch?", "options": ["pizza", "sushi"]}}`
	got := e.submessagesOf(t, &e.alice, id)
	wantSubmessages(t, "after a vote and an option", got, id, [][3]any{{e.alice.ID, "widget", widget}, {e.bob.ID, "widget", vote}, {e.alice.ID, "widget", option}})
	if len(got) != 3 {
		t.FailNow()
	}
	for _, q := range []struct {
		who   *account
		queue string
	}{{&e.alice, alice}, {&e.bob, bob}} {
		events := e.pollNow(t, q.who, q.queue, -1)
		if len(events) != 2 {
			t.Fatalf("%s: got %v, want two submessage events", q.who.Email, events)
		}
		for i, w := range []struct {
			sender  uint64
			content string
		}{{e.bob.ID, vote}, {e.alice.ID, option}} {
			want := map[string]any{"type": "submessage", "msg_type": "widget", "message_id": float64(id),
				"submessage_id": got[i+1].(map[string]any)["id"], "sender_id": float64(w.sender), "content": w.content, "id": float64(i)}
			if !jsonEqual(events[i], want) {
				t.Errorf("%s event %d:\n got %v\nwant %v", q.who.Email, i, events[i], want)
			}
		}
	}
	if events := e.pollNow(t, &e.bob, bobMessages, -1); len(events) != 0 {
		t.Errorf("a queue without submessage in its event_types heard %v", events)
	}
	if events := e.pollNow(t, &e.owner, owner, -1); len(events) != 0 {
		t.Errorf("a non-subscriber heard %v", events)
	}

	// Zulip checks types alone: a vote for no option, a repeated vote and
	// a vote of true (Python's bool is an int, and True == 1) are stored.
	for _, c := range []string{`{"type":"vote","key":"1,1","vote":1}`, vote, `{"type":"vote","key":"canned,1","vote":true}`,
		`{"type":"new_option","idx":7,"option":"maybe"}`, `{"type":"question","question":"what's for dinner?"}`} {
		who := &e.bob
		if strings.Contains(c, "question") {
			who = &e.alice
		}
		wantAPISuccess(t, e.postSubmessage(t, who, id, c))
	}
	if n := len(e.submessagesOf(t, &e.bob, id)); n != 8 {
		t.Errorf("after five more: %d submessages, want 8", n)
	}
	// A to-do list takes its own events.
	todo := e.sendToGeneral(t, &e.alice, "/todo")
	for _, c := range []string{`{"type":"new_task","key":7,"task":"eat","desc":"","completed":false}`, `{"type":"strike","key":"5,9"}`} {
		wantAPISuccess(t, e.postSubmessage(t, &e.bob, todo, c))
	}
	wantAPISuccess(t, e.postSubmessage(t, &e.alice, todo, `{"type":"new_task_list_title","title":"School Work"}`))
	if n := len(e.submessagesOf(t, &e.bob, todo)); n != 4 {
		t.Errorf("to-do list: %d submessages, want 4", n)
	}
}

// TestSubmessage_ErrorsInZulipsWordsChangeNothing: each refusal of
// process_submessage, in its order, with validate_poll_data's and
// validate_todo_data's texts, and nothing stored.
func TestSubmessage_ErrorsInZulipsWordsChangeNothing(t *testing.T) {
	e := newTestEnv(t)
	poll := e.sendToGeneral(t, &e.alice, "/poll Preference?\n\nyes\nno")
	todo := e.sendToGeneral(t, &e.alice, "/todo")
	plain := e.sendToGeneral(t, &e.alice, "plain")
	secret, err := e.st.sendMessage(e.alice.user, channelRef{ID: e.secret.ID}, "plans", "/poll shh", "")
	if err != nil {
		t.Fatal(err)
	}
	direct := e.sendDM(t, &e.alice, jsonIDs(e.admin.ID), "/poll just us")
	state := func() string {
		var all []any
		for _, id := range []uint64{poll, todo, plain, secret.ID, direct} {
			all = append(all, e.submessagesOf(t, &e.alice, id))
		}
		b, _ := json.Marshal(all)
		return string(b)
	}
	before := state()
	id := func(n uint64) string { return strconv.FormatUint(n, 10) }
	params := func(message uint64, content string) url.Values {
		return url.Values{"message_id": {id(message)}, "msg_type": {"widget"}, "content": {content}}
	}
	for _, c := range []struct {
		rule   string
		who    *account
		params url.Values
		code   string
		msg    string
	}{
		// Parameters, in the order of the view's signature.
		{"content is required", &e.bob, url.Values{"message_id": {id(poll)}, "msg_type": {"widget"}}, "REQUEST_VARIABLE_MISSING", "Missing 'content' argument"},
		{"message_id is required", &e.bob, url.Values{"msg_type": {"widget"}, "content": {"{}"}}, "REQUEST_VARIABLE_MISSING", "Missing 'message_id' argument"},
		{"msg_type is required", &e.bob, url.Values{"message_id": {id(poll)}, "content": {"{}"}}, "REQUEST_VARIABLE_MISSING", "Missing 'msg_type' argument"},
		{"content is asked for first", &e.bob, url.Values{}, "REQUEST_VARIABLE_MISSING", "Missing 'content' argument"},
		{"message_id is JSON", &e.bob, url.Values{"message_id": {"abc"}, "content": {"{}"}}, "BAD_REQUEST", "message_id is not valid JSON"},
		{"message_id is an integer", &e.bob, url.Values{"message_id": {"1.5"}, "msg_type": {"widget"}, "content": {"{}"}}, "BAD_REQUEST", "message_id is not an integer"},
		// access_message, then verify_submessage_sender, then the JSON.
		{"a message that does not exist", &e.bob, params(999999, "{}"), "BAD_REQUEST", "Invalid message(s)"},
		{"a message of a channel one cannot read", &e.bob, params(secret.ID, "bogus"), "BAD_REQUEST", "Invalid message(s)"},
		{"a direct message of others", &e.bob, params(direct, "{}"), "BAD_REQUEST", "Invalid message(s)"},
		{"the sender attaches the first", &e.bob, params(plain, "bogus"), "BAD_REQUEST", "You cannot attach a submessage to this message."},
		{"content is JSON", &e.bob, params(poll, "bogus"), "BAD_REQUEST", "Invalid json for submessage"},
		{"content is JSON, even the sender's", &e.alice, params(plain, `{"a":`), "BAD_REQUEST", "Invalid json for submessage"},
		// validate_poll_data (test_poll_type_validation).
		{"poll data is a dict", &e.bob, params(poll, `""`), "BAD_REQUEST", "poll data is not a dict"},
		{"poll data is a dict, not a list", &e.bob, params(poll, `[]`), "BAD_REQUEST", "poll data is not a dict"},
		{"poll data has a type", &e.bob, params(poll, `{}`), "BAD_REQUEST", "type key is missing from poll data"},
		{"the type is a string", &e.bob, params(poll, `{"type": 1}`), "BAD_REQUEST", `poll data["type"] is not a string`},
		{"an unknown type", &e.bob, params(poll, `{"type": "bogus"}`), "BAD_REQUEST", "Unknown type for poll data: bogus"},
		{"a vote has a key", &e.bob, params(poll, `{"type": "vote"}`), "BAD_REQUEST", "key key is missing from poll data"},
		{"a vote is 1 or -1", &e.bob, params(poll, `{"type": "vote", "key": "1,1,", "vote": 99}`), "BAD_REQUEST", `Invalid poll data["vote"]`},
		{"a vote is an integer", &e.bob, params(poll, `{"type": "vote", "key": "1,1", "vote": 1.0}`), "BAD_REQUEST", `poll data["vote"] is not an integer`},
		{"a vote of false is 0", &e.bob, params(poll, `{"type": "vote", "key": "1,1", "vote": false}`), "BAD_REQUEST", `Invalid poll data["vote"]`},
		{"a vote takes no more keys", &e.bob, params(poll, `{"type": "vote", "key": "1,1", "vote": 1, "extra": 2}`), "BAD_REQUEST", "Unexpected arguments: extra"},
		{"only the author edits the question", &e.bob, params(poll, `{"type": "question", "question": "Tabs or spaces?"}`), "BAD_REQUEST", "You can't edit a question unless you are the author."},
		{"authorship is checked before the keys", &e.bob, params(poll, `{"type": "question"}`), "BAD_REQUEST", "You can't edit a question unless you are the author."},
		{"a question has a question", &e.alice, params(poll, `{"type": "question"}`), "BAD_REQUEST", "question key is missing from poll data"},
		{"a question is a string", &e.alice, params(poll, `{"type": "question", "question": 7}`), "BAD_REQUEST", `poll data["question"] is not a string`},
		{"an option has keys", &e.bob, params(poll, `{"type": "new_option"}`), "BAD_REQUEST", "option key is missing from poll data"},
		{"an option is a string", &e.bob, params(poll, `{"type": "new_option", "idx": 7, "option": 999}`), "BAD_REQUEST", `poll data["option"] is not a string`},
		{"an option's idx is at least 0", &e.bob, params(poll, `{"type": "new_option", "idx": -1, "option": "pizza"}`), "BAD_REQUEST", `poll data["idx"] is too small`},
		{"an option's idx is at most 1000", &e.bob, params(poll, `{"type": "new_option", "idx": 1001, "option": "pizza"}`), "BAD_REQUEST", `poll data["idx"] is too large`},
		{"an option's idx is an integer", &e.bob, params(poll, `{"type": "new_option", "idx": "bogus", "option": "maybe"}`), "BAD_REQUEST", `poll data["idx"] is not an integer`},
		// validate_todo_data (test_todo_type_validation, test_todo_permissions).
		{"an unknown to-do type", &e.bob, params(todo, `{"type": "bogus"}`), "BAD_REQUEST", "Unknown type for todo data: bogus"},
		{"a task has a key", &e.bob, params(todo, `{"type": "new_task"}`), "BAD_REQUEST", "key key is missing from todo data"},
		{"a task is a string", &e.bob, params(todo, `{"type": "new_task", "key": 7, "task": 7, "desc": "", "completed": false}`), "BAD_REQUEST", `todo data["task"] is not a string`},
		{"a task's key is at least 0", &e.bob, params(todo, `{"type": "new_task", "key": -1, "task": "eat", "desc": "", "completed": false}`), "BAD_REQUEST", `todo data["key"] is too small`},
		{"a task's key is at most 1000", &e.bob, params(todo, `{"type": "new_task", "key": 1001, "task": "eat", "desc": "", "completed": false}`), "BAD_REQUEST", `todo data["key"] is too large`},
		{"completed is a boolean", &e.bob, params(todo, `{"type": "new_task", "key": 1, "task": "eat", "desc": "", "completed": 0}`), "BAD_REQUEST", `todo data["completed"] is not a boolean`},
		{"a strike has a key", &e.bob, params(todo, `{"type": "strike"}`), "BAD_REQUEST", "key key is missing from todo data"},
		{"a strike's key is a string", &e.bob, params(todo, `{"type": "strike", "key": 999}`), "BAD_REQUEST", `todo data["key"] is not a string`},
		{"only the author retitles the list", &e.bob, params(todo, `{"type": "new_task_list_title", "title": "School Work"}`), "BAD_REQUEST", "You can't edit the task list title unless you are the author."},
		{"a title is a string", &e.alice, params(todo, `{"type": "new_task_list_title", "title": null}`), "BAD_REQUEST", `todo data["title"] is not a string`},
	} {
		r := e.request(t, http.MethodPost, submessagePath, c.params, c.who)
		if r.status != 400 || r.str("code") != c.code || r.str("msg") != c.msg {
			t.Errorf("%s: got %d %s, want 400 %s %q", c.rule, r.status, r.raw, c.code, c.msg)
		}
		if after := state(); after != before {
			t.Errorf("%s: refused, but the submessages changed from %s to %s", c.rule, before, after)
			before = after
		}
	}
}

// TestSubmessage_TheSenderAttachesFirst: on a message without a widget
// anything that is JSON goes, of any msg_type, but its sender's comes
// first (verify_submessage_sender); the first submessage of msg_type
// widget decides what is checked afterwards (get_widget_type).
func TestSubmessage_TheSenderAttachesFirst(t *testing.T) {
	e := newTestEnv(t)
	id := e.sendToGeneral(t, &e.alice, "a game")
	post := func(a *account, msgType, content string) response {
		return e.request(t, http.MethodPost, submessagePath, url.Values{"message_id": {strconv.FormatUint(id, 10)}, "msg_type": {msgType}, "content": {content}}, a)
	}
	wantAPIError(t, post(&e.bob, "chess", `{"move":"e4"}`), 400, "BAD_REQUEST", "You cannot attach a submessage to this message.")
	wantAPISuccess(t, post(&e.alice, "chess", `[1, "two"]`))
	wantAPISuccess(t, post(&e.bob, "chess", `{"move":"e4"}`))
	widget := `{"widget_type": "poll", "extra_data": {"question": "Q", "options": []}}`
	wantAPISuccess(t, post(&e.alice, "widget", widget))
	wantAPIError(t, post(&e.bob, "widget", `{"type":"bogus"}`), 400, "BAD_REQUEST", "Unknown type for poll data: bogus")
	wantAPIError(t, post(&e.bob, "chess", `{"type":"bogus"}`), 400, "BAD_REQUEST", "Unknown type for poll data: bogus")
	wantSubmessages(t, "a game's submessages", e.submessagesOf(t, &e.bob, id), id,
		[][3]any{{e.alice.ID, "chess", `[1, "two"]`}, {e.bob.ID, "chess", `{"move":"e4"}`}, {e.alice.ID, "widget", widget}})
}

// TestWidgets_CannotBeEdited: a message with submessages keeps its
// content (validate_message_edit_payload); its topic may still change.
func TestWidgets_CannotBeEdited(t *testing.T) {
	e := newTestEnv(t)
	poll := e.sendToGeneral(t, &e.alice, "/poll Lunch?")
	plain := e.sendToGeneral(t, &e.alice, "plain")
	wantAPISuccess(t, e.postSubmessage(t, &e.alice, plain, `{}`))
	direct := e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "/todo")
	for _, id := range []uint64{poll, plain, direct} {
		before, _ := e.storedMessage(t, id)
		wantAPIError(t, e.request(t, http.MethodPatch, msgPath(id), url.Values{"content": {"/poll Dinner?"}}, &e.alice), 400, "BAD_REQUEST", "Widgets cannot be edited.")
		if after, _ := e.storedMessage(t, id); !jsonEqual(after, before) {
			t.Errorf("message %d: refused, but it changed from %+v to %+v", id, before, after)
		}
	}
	wantAPISuccess(t, e.request(t, http.MethodPatch, msgPath(poll), url.Values{"topic": {"lunch"}}, &e.alice))
	if m, _ := e.storedMessage(t, poll); m.Topic != "lunch" {
		t.Errorf("the poll's topic: got %q, want lunch", m.Topic)
	}
	wantSubmessages(t, "the moved poll", e.submessagesOf(t, &e.bob, poll), poll,
		[][3]any{{e.alice.ID, "widget", `{"widget_type": "poll", "extra_data": {"question": "Lunch?", "options": []}}`}})
}

// storedSubmessages counts the submessages bucket's entries of a
// message (none when the bucket is missing).
func (e *testEnv) storedSubmessages(t *testing.T, id uint64) int {
	t.Helper()
	n := 0
	mustView(t, e.st, func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("submessages"))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.Seek(itob(id)); k != nil && bytes.HasPrefix(k, itob(id)); k, _ = c.Next() {
			n++
		}
		return nil
	})
	return n
}

// TestSubmessage_GoWithTheirMessage: deleting a message deletes its
// submessages, a channel's or a direct one's.
func TestSubmessage_GoWithTheirMessage(t *testing.T) {
	e := newTestEnv(t)
	poll := e.sendToGeneral(t, &e.alice, "/poll Lunch?\npizza")
	direct := e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "/poll Dinner?\nsoup")
	kept := e.sendToGeneral(t, &e.alice, "/poll Breakfast?")
	for _, id := range []uint64{poll, direct, kept} {
		wantAPISuccess(t, e.postSubmessage(t, &e.bob, id, `{"type":"vote","key":"canned,0","vote":1}`))
		if n := e.storedSubmessages(t, id); n != 2 {
			t.Fatalf("message %d: %d submessages stored, want 2", id, n)
		}
	}
	for _, id := range []uint64{poll, direct} {
		wantAPISuccess(t, e.request(t, http.MethodDelete, msgPath(id), nil, &e.alice))
		if n := e.storedSubmessages(t, id); n != 0 {
			t.Errorf("message %d was deleted, but %d of its submessages are stored", id, n)
		}
	}
	if n := e.storedSubmessages(t, kept); n != 2 {
		t.Errorf("another message lost submessages: %d stored, want 2", n)
	}
}

// TestSubmessage_ContentPerMessageIsBounded: a message's submessages
// hold at most maxSubmessageBytes of content together (zulite's bound;
// Zulip sets none), so that no one can make every fetch of a message
// ever larger.
func TestSubmessage_ContentPerMessageIsBounded(t *testing.T) {
	e := newTestEnv(t)
	id := e.sendToGeneral(t, &e.alice, "big")
	big := `"` + strings.Repeat("x", 600_000) + `"`
	wantAPISuccess(t, e.request(t, http.MethodPost, submessagePath, url.Values{"message_id": {strconv.FormatUint(id, 10)}, "msg_type": {"blob"}, "content": {big}}, &e.alice))
	r := e.request(t, http.MethodPost, submessagePath, url.Values{"message_id": {strconv.FormatUint(id, 10)}, "msg_type": {"blob"}, "content": {big}}, &e.bob)
	wantAPIError(t, r, 400, "BAD_REQUEST", "This message's submessages are at their limit (1048576 bytes).")
	if n := e.storedSubmessages(t, id); n != 1 {
		t.Errorf("%d submessages stored, want 1", n)
	}
	wantAPISuccess(t, e.request(t, http.MethodPost, submessagePath, url.Values{"message_id": {strconv.FormatUint(id, 10)}, "msg_type": {"blob"}, "content": {"{}"}}, &e.bob))
}

// TestWidgets_WidgetContentMakesAZform: POST /messages' widget_content
// (Zulip's check_widget_content, which takes only zform) becomes the
// first submessage instead of what the content asks for, re-encoded as
// Python's json.dumps writes what orjson read (keys in order, numbers
// Python's way); a refused one refuses the send, in Zulip's words, after
// the channel is checked, and stores nothing.
func TestWidgets_WidgetContentMakesAZform(t *testing.T) {
	e := newTestEnv(t)
	send := func(a *account, params url.Values) response {
		return e.request(t, http.MethodPost, "/api/v1/messages", params, a)
	}
	channel := func(content, widget string) url.Values {
		return url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"quiz"}, "content": {content}, "widget_content": {widget}}
	}
	zform := `{"widget_type":"zform","extra_data":{"type":"choices","heading":"Pick: é","choices":[{"short_name":"A","long_name":"one","reply":"a","n":1.0,"big":1e16,"small":0.00001,"neg":-0,"x":[true,null]}],"heading":"Pick!"}}`
	want := `{"widget_type": "zform", "extra_data": {"type": "choices", "heading": "Pick!", "choices": [{"short_name": "A", "long_name": "one", "reply": "a", "n": 1.0, "big": 1e+16, "small": 1e-05, "neg": 0, "x": [true, null]}]}}`
	r := send(&e.bot, channel("/poll not this one", zform))
	wantAPISuccess(t, r)
	id := uint64(r.body["id"].(float64))
	wantSubmessages(t, "a zform on a channel message", e.submessagesOf(t, &e.alice, id), id, [][3]any{{e.bot.ID, "widget", want}})
	r = send(&e.alice, url.Values{"type": {"direct"}, "to": {jsonIDs(e.bob.ID)}, "content": {"quiz"}, "widget_content": {`{"widget_type":"zform","extra_data":{"type":"choices","heading":"","choices":[]}}`}})
	wantAPISuccess(t, r)
	id = uint64(r.body["id"].(float64))
	wantSubmessages(t, "a zform on a direct message", e.submessagesOf(t, &e.bob, id), id,
		[][3]any{{e.alice.ID, "widget", `{"widget_type": "zform", "extra_data": {"type": "choices", "heading": "", "choices": []}}`}})

	count := func() int {
		n := 0
		mustView(t, e.st, func(tx *bbolt.Tx) error { n = tx.Bucket(bucketMessages).Stats().KeyN; return nil })
		return n
	}
	before := count()
	for _, c := range []struct{ rule, widget, msg string }{
		{"JSON", `{{{{{{`, "Widgets: API programmer sent invalid JSON content"},
		{"a dict", `5`, "Widgets: widget_content is not a dict"},
		{"with a widget_type", `{"color": "red", "foo": "bar", "x": 2}`, "Widgets: widget_type is not in widget_content"},
		{"with extra_data", `{"widget_type": "whatever"}`, "Widgets: extra_data is not in widget_content"},
		{"extra_data a dict", `{"widget_type": "zform", "extra_data": 4}`, "Widgets: extra_data is not a dict"},
		{"only zform", `{"widget_type": "bogus", "extra_data": {}}`, "Widgets: unknown widget type: bogus"},
		{"not even a poll", `{"widget_type": "poll", "extra_data": {"question": "Q", "options": []}}`, "Widgets: unknown widget type: poll"},
		{"a zform type", `{"widget_type": "zform", "extra_data": {}}`, "Widgets: zform is missing type field"},
		{"choices alone", `{"widget_type": "zform", "extra_data": {"type": "bogus"}}`, "Widgets: unknown zform type: bogus"},
		{"a heading", `{"widget_type": "zform", "extra_data": {"type": "choices"}}`, "Widgets: heading key is missing from extra_data"},
		{"choices", `{"widget_type": "zform", "extra_data": {"type": "choices", "heading": "whatever"}}`, "Widgets: choices key is missing from extra_data"},
		{"a list of choices", `{"widget_type": "zform", "extra_data": {"type": "choices", "heading": "whatever", "choices": 99}}`, `Widgets: extra_data["choices"] is not a list`},
		{"choices are dicts", `{"widget_type": "zform", "extra_data": {"type": "choices", "heading": "whatever", "choices": [99]}}`, `Widgets: extra_data["choices"][0] is not a dict`},
		{"a choice's short_name", `{"widget_type": "zform", "extra_data": {"type": "choices", "heading": "whatever", "choices": [{"long_name": "foo", "reply": "bar"}]}}`, `Widgets: short_name key is missing from extra_data["choices"][0]`},
		{"a choice's reply is a string", `{"widget_type": "zform", "extra_data": {"type": "choices", "heading": "h", "choices": [{"short_name": "a", "long_name": "b", "reply": 3}]}}`, `Widgets: extra_data["choices"][0]["reply"] is not a string`},
	} {
		wantAPIError(t, send(&e.bot, channel("quiz", c.widget)), 400, "BAD_REQUEST", c.msg)
		if n := count(); n != before {
			t.Errorf("widget_content %s: refused, but %d messages are stored, not %d", c.rule, n, before)
			before = n
		}
	}
	// The channel is checked first; the widget before the rendering.
	r = send(&e.bot, url.Values{"type": {"stream"}, "to": {"no-such-channel"}, "topic": {"quiz"}, "content": {"quiz"}, "widget_content": {"5"}})
	if r.str("code") != "STREAM_DOES_NOT_EXIST" {
		t.Errorf("a bad widget to a missing channel: got %s, want STREAM_DOES_NOT_EXIST", r.raw)
	}
	wantAPIError(t, send(&e.bot, url.Values{"type": {"direct"}, "to": {jsonIDs(e.bob.ID)}, "content": {"quiz"}, "widget_content": {"5"}}), 400, "BAD_REQUEST", "Widgets: widget_content is not a dict")
}

// TestExport_CountsTheSubmessagesZulipsFormatHasNoPlaceFor: Zulip's
// export leaves zerver_submessage out (export.py's NON_EXPORTED_TABLES,
// "unfinished features"), so a poll goes over as its text alone; the
// report says how many submessages stayed behind.
func TestExport_CountsTheSubmessagesZulipsFormatHasNoPlaceFor(t *testing.T) {
	e := newTestEnv(t)
	poll := e.sendToGeneral(t, &e.alice, "/poll Lunch?\npizza")
	wantAPISuccess(t, e.postSubmessage(t, &e.bob, poll, `{"type":"vote","key":"canned,0","vote":1}`))
	e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "/todo")
	dir := filepath.Join(t.TempDir(), "export")
	if err := prepareExportDir(dir); err != nil {
		t.Fatal(err)
	}
	r, err := e.st.export(dir, e.st.uploadsDir())
	if err != nil {
		t.Fatal(err)
	}
	if want := "3 submessages (polls and to-do lists: Zulip's export has none; their messages go over as their text)"; !strings.Contains(r.String(), want) {
		t.Errorf("the export's report:\n%s\nsays nothing of %q", r, want)
	}
}
