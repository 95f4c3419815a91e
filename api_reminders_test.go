package main

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// remindAt asks for a reminder of message at due and answers its id.
func (e *testEnv) remindAt(t *testing.T, a *account, message uint64, due int64, note string) uint64 {
	t.Helper()
	params := url.Values{"message_id": {strconv.FormatUint(message, 10)}, "scheduled_delivery_timestamp": {strconv.FormatInt(due, 10)}}
	if note != "" {
		params.Set("note", note)
	}
	r := e.request(t, http.MethodPost, "/api/v1/reminders", params, a)
	wantAPISuccess(t, r)
	return uint64(r.body["reminder_id"].(float64))
}

func (e *testEnv) reminderList(t *testing.T, a *account) []any {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/reminders", nil, a)
	wantAPISuccess(t, r)
	return asList(r.body["reminders"])
}

func reminderPath(id uint64) string { return "/api/v1/reminders/" + strconv.FormatUint(id, 10) }

// TestReminders_CreateListDeleteToldToOwnQueuesAndInRegister: a reminder
// holds Zulip's text (the note, who said it where with a link, the
// message quoted), is listed by GET /reminders and register and not
// among the scheduled messages, and is told to the owner's queues alone
// as Zulip's reminders events.
func TestReminders_CreateListDeleteToldToOwnQueuesAndInRegister(t *testing.T) {
	e := newTestEnv(t)
	const at = 1_800_000_000
	fixedClock(e, at)
	inChannel := e.sendToGeneral(t, &e.bob, "lunch at ``` noon")
	direct := e.sendDM(t, &e.bob, "["+idKey(e.alice)+"]", "```\ncode\n```")
	aliceQueue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["reminders"]`}}).str("queue_id")
	bobQueue := e.registerQueue(t, &e.bob, nil).str("queue_id")

	first := e.remindAt(t, &e.alice, inChannel, at+60, "")
	second := e.remindAt(t, &e.alice, direct, at+30, "  don't forget \n\n")
	bob := "@_**" + e.bob.FullName + "|" + idKey(e.bob) + "**"
	alice := "@_**" + e.alice.FullName + "|" + idKey(e.alice) + "**"
	n := strconv.FormatUint(inChannel, 10)
	channelText := "You requested a reminder for the following message.\n\n" + bob +
		" [said](http://zulite.test/#narrow/channel/" + strconv.FormatUint(e.general.ID, 10) + "-general/topic/polls/near/" + n +
		") in #**general>polls@" + n + "**:\n```quote\nlunch at ``` noon\n```"
	d := strconv.FormatUint(direct, 10)
	ids := []uint64{e.alice.ID, e.bob.ID}
	if ids[0] > ids[1] {
		ids[0], ids[1] = ids[1], ids[0]
	}
	directText := "You requested a reminder for the following direct message. Note:\n >   don't forget\n\n" + bob +
		" [said](http://zulite.test/#narrow/dm/" + strconv.FormatUint(ids[0], 10) + "," + strconv.FormatUint(ids[1], 10) + "/near/" + d +
		") to " + alice + ":\n```quote\n```\ncode\n```\n```" // Zulip picks the fence from its own text alone
	list := e.reminderList(t, &e.alice)
	if len(list) != 2 {
		t.Fatalf("GET reminders: got %v, want two", list)
	}
	for i, want := range []struct {
		id, target uint64
		due        int64
		content    string
	}{{second, direct, at + 30, directText}, {first, inChannel, at + 60, channelText}} {
		got := list[i].(map[string]any)
		if got["reminder_id"] != float64(want.id) || got["reminder_target_message_id"] != float64(want.target) || got["type"] != "private" ||
			!jsonEqual(got["to"], []any{float64(e.alice.ID)}) || got["scheduled_delivery_timestamp"] != float64(want.due) ||
			got["failed"] != false || got["content"] != want.content || !strings.HasPrefix(got["rendered_content"].(string), "<p>You requested") {
			t.Errorf("reminder %d:\n got %v\nwant id %d, target %d, due %d, content\n%s", i, got, want.id, want.target, want.due, want.content)
		}
	}
	if got := e.scheduledList(t, &e.alice); len(got) != 0 {
		t.Errorf("reminders among the scheduled messages: %v", got)
	}
	if got := e.reminderList(t, &e.bob); len(got) != 0 {
		t.Errorf("bob sees alice's reminders: %v", got)
	}
	reg := e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {`["reminders"]`}})
	if !jsonEqual(reg.body["reminders"], list) || reg.body["max_reminder_note_length"] != nil {
		t.Errorf("register's reminders: got %v, want %v (and no realm keys)", reg.body["reminders"], list)
	}
	if reg := e.registerQueue(t, &e.alice, nil); reg.body["max_reminder_note_length"] != float64(maxReminderNoteLength) {
		t.Errorf("max_reminder_note_length: got %v", reg.body["max_reminder_note_length"])
	}

	wantAPISuccess(t, e.request(t, http.MethodDelete, reminderPath(second), nil, &e.alice))
	if got := e.reminderList(t, &e.alice); len(got) != 1 || got[0].(map[string]any)["reminder_id"] != float64(first) {
		t.Errorf("after delete: got %v, want the first alone", got)
	}
	wantEvents := plainJSON([]map[string]any{
		{"type": "reminders", "op": "add", "reminders": []any{list[1]}, "id": 0},
		{"type": "reminders", "op": "add", "reminders": []any{list[0]}, "id": 1},
		{"type": "reminders", "op": "remove", "reminder_id": second, "id": 2},
	})
	if got := e.pollNow(t, &e.alice, aliceQueue, -1); !jsonEqual(plainJSON(got), wantEvents) {
		t.Errorf("alice's events:\n got %v\nwant %v", got, wantEvents)
	}
	if got := e.pollNow(t, &e.bob, bobQueue, -1); len(got) != 0 {
		t.Errorf("bob heard of alice's reminders: %v", got)
	}
}

// TestReminders_BadInputRefusedAndChangesNothing: each refusal in
// Zulip's words and code; a reminder is only of a message the caller may
// read; reminders and scheduled messages are not each other's; and
// afterwards nothing changed and nothing was told.
func TestReminders_BadInputRefusedAndChangesNothing(t *testing.T) {
	e := newTestEnv(t)
	const at = 1_800_000_000
	fixedClock(e, at)
	public := e.sendToGeneral(t, &e.alice, "hello")
	secret := e.sendText(t, e.alice, e.secret, "hush")
	kept := e.remindAt(t, &e.alice, public, at+60, "")
	scheduled := e.scheduleAt(t, &e.alice, channelPost(e.general, "t", "later", at+60))
	queue := e.registerQueue(t, &e.alice, nil).str("queue_id")
	before, scheduledBefore := e.reminderList(t, &e.alice), e.scheduledList(t, &e.alice)
	post := func(message string, due int64, note string) url.Values {
		v := url.Values{"message_id": {message}, "scheduled_delivery_timestamp": {strconv.FormatInt(due, 10)}}
		if note != "" {
			v.Set("note", note)
		}
		return v
	}
	p := strconv.FormatUint(public, 10)
	cases := []struct {
		name         string
		as           *account
		method, path string
		params       url.Values
		status       int
		code, msg    string
	}{
		{"message_id is required", &e.alice, "POST", "/api/v1/reminders", url.Values{"scheduled_delivery_timestamp": {strconv.Itoa(at + 60)}}, 400, "REQUEST_VARIABLE_MISSING", "Missing 'message_id' argument"},
		{"message_id is an integer", &e.alice, "POST", "/api/v1/reminders", post("first", at+60, ""), 400, "BAD_REQUEST", "message_id is not valid JSON"},
		{"the time is required", &e.alice, "POST", "/api/v1/reminders", url.Values{"message_id": {p}}, 400, "REQUEST_VARIABLE_MISSING", "Missing 'scheduled_delivery_timestamp' argument"},
		{"now is not the future", &e.alice, "POST", "/api/v1/reminders", post(p, at, ""), 400, "BAD_REQUEST", "Scheduled delivery time must be in the future."},
		{"the message exists", &e.alice, "POST", "/api/v1/reminders", post("999999", at+60, ""), 400, "BAD_REQUEST", "Invalid message(s)"},
		{"message id zero", &e.alice, "POST", "/api/v1/reminders", post("0", at+60, ""), 400, "BAD_REQUEST", "Invalid message(s)"},
		{"a message the caller cannot read", &e.bob, "POST", "/api/v1/reminders", post(strconv.FormatUint(secret, 10), at+60, ""), 400, "BAD_REQUEST", "Invalid message(s)"},
		{"the note is bounded", &e.alice, "POST", "/api/v1/reminders", post(p, at+60, strings.Repeat("é", maxReminderNoteLength+1)), 400, "BAD_REQUEST", "Maximum reminder note length: 1000 characters"},
		{"an unknown reminder", &e.alice, "DELETE", reminderPath(kept + 100), nil, 404, "BAD_REQUEST", "Reminder does not exist"},
		{"an id past any", &e.alice, "DELETE", "/api/v1/reminders/99999999999999999999", nil, 404, "BAD_REQUEST", "Reminder does not exist"},
		{"another's reminder", &e.bob, "DELETE", reminderPath(kept), nil, 404, "BAD_REQUEST", "Reminder does not exist"},
		{"a scheduled message is no reminder", &e.alice, "DELETE", reminderPath(scheduled), nil, 404, "BAD_REQUEST", "Reminder does not exist"},
		{"a reminder is no scheduled message", &e.alice, "DELETE", scheduledPath(kept), nil, 404, "BAD_REQUEST", "Scheduled message does not exist"},
		{"nor edited as one", &e.alice, "PATCH", scheduledPath(kept), url.Values{"content": {"x"}}, 404, "BAD_REQUEST", "Scheduled message does not exist"},
	}
	for _, c := range cases {
		r := e.request(t, c.method, c.path, c.params, c.as)
		if r.status != c.status || r.str("code") != c.code || r.str("msg") != c.msg {
			t.Errorf("%s: got %d %s %q, want %d %s %q", c.name, r.status, r.str("code"), r.str("msg"), c.status, c.code, c.msg)
		}
	}
	if after := e.reminderList(t, &e.alice); !jsonEqual(after, before) {
		t.Errorf("reminders after refusals: got %v, want %v", after, before)
	}
	if after := e.scheduledList(t, &e.alice); !jsonEqual(after, scheduledBefore) {
		t.Errorf("scheduled messages after refusals: got %v, want %v", after, scheduledBefore)
	}
	if got := e.reminderList(t, &e.bob); len(got) != 0 {
		t.Errorf("bob's reminders after refusals: %v", got)
	}
	if got := e.pollNow(t, &e.alice, queue, -1); len(got) != 0 {
		t.Errorf("refusals told events: %v", got)
	}
}

// TestReminders_CountInTheScheduledBound: reminders and scheduled
// messages share maxScheduledPerUser.
func TestReminders_CountInTheScheduledBound(t *testing.T) {
	e := newTestEnv(t)
	const at = 1_800_000_000
	fixedClock(e, at)
	public := e.sendToGeneral(t, &e.alice, "hello")
	list := make([]storedScheduled, maxScheduledPerUser)
	for i := range list {
		list[i] = storedScheduled{Type: "private", Recipients: []uint64{e.alice.ID}, Content: "c", Due: at + 100 + int64(i), Target: public}
	}
	e.putScheduled(t, e.alice, list...)
	r := e.request(t, http.MethodPost, "/api/v1/reminders", url.Values{"message_id": {strconv.FormatUint(public, 10)},
		"scheduled_delivery_timestamp": {strconv.Itoa(at + 60)}}, &e.alice)
	wantAPIError(t, r, 400, "BAD_REQUEST", "You may have at most 1000 scheduled messages.")
	r = e.request(t, http.MethodPost, "/api/v1/scheduled_messages", channelPost(e.general, "t", "one more", at+60), &e.alice)
	wantAPIError(t, r, 400, "BAD_REQUEST", "You may have at most 1000 scheduled messages.")
	if got := len(e.reminderList(t, &e.alice)); got != maxScheduledPerUser {
		t.Errorf("reminders: got %d, want %d", got, maxScheduledPerUser)
	}
}

// TestReminders_SentAtItsTimeToTheUserOnce: at its time the reminder
// arrives as a direct message to the user, unread, with the text it
// was listed with; it leaves the list (a remove event), and another
// pass sends nothing again.
func TestReminders_SentAtItsTimeToTheUserOnce(t *testing.T) {
	e := newTestEnv(t)
	const at = 1_800_000_000
	setNow := fixedClock(e, at)
	target := e.sendToGeneral(t, &e.bob, "ship it")
	id := e.remindAt(t, &e.alice, target, at+60, "")
	content := e.reminderList(t, &e.alice)[0].(map[string]any)["content"].(string)
	aliceQueue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["reminders","message"]`}}).str("queue_id")
	bobQueue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["message"]`}}).str("queue_id")
	setNow(at + 59)
	e.server.scheduler.deliverDue()
	if got := e.messagesAs(t, &e.alice, `[{"operator":"dm","operand":[`+idKey(e.alice)+`]}]`); len(got) != 0 {
		t.Fatalf("sent early: %v", got)
	}
	setNow(at + 60)
	e.server.scheduler.deliverDue()
	e.server.scheduler.deliverDue()
	got := e.messagesAs(t, &e.alice, `[{"operator":"dm","operand":[`+idKey(e.alice)+`]}]`)
	if len(got) != 1 || !strings.Contains(got[0]["content"].(string), "You requested a reminder") {
		t.Fatalf("alice's messages to herself: got %v, want the reminder once", got)
	}
	if r := e.request(t, http.MethodGet, "/api/v1/messages/"+strconv.FormatInt(int64(got[0]["id"].(float64)), 10), nil, &e.alice); r.body["raw_content"] != content {
		t.Errorf("sent content: got %q, want %q", r.body["raw_content"], content)
	}
	if !jsonEqual(got[0]["flags"], []any{}) {
		t.Errorf("the reminder's flags: got %v, want unread", got[0]["flags"])
	}
	if got := e.reminderList(t, &e.alice); len(got) != 0 {
		t.Errorf("still listed after sending: %v", got)
	}
	events := e.pollNow(t, &e.alice, aliceQueue, -1)
	if len(events) != 2 || !jsonEqual(plainJSON(events[0]), plainJSON(map[string]any{"type": "reminders", "op": "remove", "reminder_id": id, "id": 0})) ||
		events[1]["type"] != "message" || !jsonEqual(events[1]["flags"], []any{}) {
		t.Errorf("alice's events: got %v, want the reminder's removal and the message, unread", events)
	}
	if got := e.pollNow(t, &e.bob, bobQueue, -1); len(got) != 0 {
		t.Errorf("bob heard of alice's reminder: %v", got)
	}
}

// TestReminders_ChannelLinkFallsBackWhereTheSyntaxWouldBreak: a topic
// holding one of get_message_link_syntax's characters (here ">" and
// "*") is linked as Zulip's plain Markdown link, escaped.
func TestReminders_ChannelLinkFallsBackWhereTheSyntaxWouldBreak(t *testing.T) {
	e := newTestEnv(t)
	const at = 1_800_000_000
	fixedClock(e, at)
	r := e.sendContent(t, &e.alice, "a>b*", "hi")
	wantAPISuccess(t, r)
	id := uint64(r.body["id"].(float64))
	e.remindAt(t, &e.alice, id, at+60, "")
	n := strconv.FormatUint(id, 10)
	link := "[#general > a&gt;b&#42; @ 💬](#narrow/channel/" + strconv.FormatUint(e.general.ID, 10) + "-general/topic/a.3Eb*/near/" + n + ")"
	got := e.reminderList(t, &e.alice)[0].(map[string]any)["content"].(string)
	if want := ") in " + link + ":\n```quote\nhi\n```"; !strings.HasSuffix(got, want) {
		t.Errorf("content: got\n%s\nwant it to end with\n%s", got, want)
	}
}
