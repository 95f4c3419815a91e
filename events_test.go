package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"zulite/internal/conns"
)

func (e *testEnv) registerQueue(t *testing.T, a *account, params url.Values) response {
	t.Helper()
	r := e.requestAs(t, multipartForm, http.MethodPost, "/api/v1/register", params, a)
	wantAPISuccess(t, r)
	return r
}

// pollNow fetches the queue's events without waiting.
func (e *testEnv) pollNow(t *testing.T, a *account, queueID string, lastEventID int) []map[string]any {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {queueID}, "last_event_id": {strconv.Itoa(lastEventID)}, "dont_block": {"true"}}, a)
	wantAPISuccess(t, r)
	var events []map[string]any
	for _, ev := range r.body["events"].([]any) {
		events = append(events, ev.(map[string]any))
	}
	return events
}

func TestRegister_StateMatchesWhatGetMessagesShows(t *testing.T) {
	e := newTestEnv(t)
	lunch := []uint64{e.sendAs(t, e.bob, e.general, "lunch"), e.sendAs(t, e.bob, e.general, "lunch")}
	dinner := e.sendAs(t, e.bob, e.general, "dinner")
	if err := e.st.addSubscriptionForTest(e.bob.user, e.secret); err != nil {
		t.Fatal(err)
	}
	secret := e.sendAs(t, e.bob, e.secret, "s")
	r := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["message","update_message_flags","subscription"]`}, "client_capabilities": {`{"notification_settings_null":true,"some_future_capability":true}`}})

	for _, f := range []string{"queue_id", "last_event_id", "zulip_version", "zulip_feature_level", "zulip_merge_base", "max_message_id", "subscriptions", "unsubscribed", "never_subscribed", "unread_msgs"} {
		if _, ok := r.body[f]; !ok {
			t.Errorf("register lacks %s", f)
		}
	}
	for _, f := range []string{"realm_users", "realm_name"} {
		if _, ok := r.body[f]; ok {
			t.Errorf("register answers %s, which was not asked for", f)
		}
	}
	if r.body["last_event_id"] != -1.0 || r.body["max_message_id"] != float64(secret) || r.body["zulip_feature_level"] != 421.0 {
		t.Errorf("register: got last_event_id %v, max_message_id %v, level %v", r.body["last_event_id"], r.body["max_message_id"], r.body["zulip_feature_level"])
	}
	unread := r.body["unread_msgs"].(map[string]any)
	want := []any{ // ordered as Zulip's aggregate_streams orders them: by channel, then lower-cased topic
		map[string]any{"stream_id": float64(e.general.ID), "topic": "dinner", "unread_message_ids": toAny([]uint64{dinner})},
		map[string]any{"stream_id": float64(e.general.ID), "topic": "lunch", "unread_message_ids": toAny(lunch)},
		map[string]any{"stream_id": float64(e.secret.ID), "topic": "s", "unread_message_ids": toAny([]uint64{secret})},
	}
	if unread["count"] != 4.0 || !jsonEqual(unread["streams"], want) || unread["old_unreads_missing"] != false {
		t.Errorf("unread_msgs: got %v, want count 4 and %v", unread, want)
	}
	_, fromMessages := e.page(t, &e.alice, rangeParams("oldest", 0, 100, `[["is","unread"]]`))
	if !slices.Equal(fromMessages, []uint64{lunch[0], lunch[1], dinner, secret}) {
		t.Errorf("GET /messages is:unread: got %v, want the same four", fromMessages)
	}
	var names []string
	for _, s := range r.body["subscriptions"].([]any) {
		names = append(names, s.(map[string]any)["name"].(string))
	}
	if !slices.Equal(names, []string{"general", "secret"}) || len(r.body["never_subscribed"].([]any)) != 0 {
		t.Errorf("subscriptions: got %v and never_subscribed %v", names, r.body["never_subscribed"])
	}
	r = e.registerQueue(t, &e.owner, url.Values{"fetch_event_types": {`["realm_user","realm"]`}})
	if len(r.body["realm_users"].([]any)) != 5 || r.body["realm_name"] != "zulite" {
		t.Errorf("owner's register: got %d realm_users, realm_name %v", len(r.body["realm_users"].([]any)), r.body["realm_name"])
	}
	if _, ok := r.body["unread_msgs"]; ok {
		t.Errorf("fetch_event_types without update_message_flags still answered unread_msgs")
	}
}

// jsonEqual compares a and b as JSON; two values that do not encode are
// not equal (their empty encodings would be).
func jsonEqual(a, b any) bool {
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && string(x) == string(y)
}

func TestEvents_MessagesFlagsAndSubscriptionsReachTheRightQueues(t *testing.T) {
	e := newTestEnv(t)
	alice := e.registerQueue(t, &e.alice, nil).str("queue_id")
	bob := e.registerQueue(t, &e.bob, url.Values{"apply_markdown": {"true"}}).str("queue_id")
	owner := e.registerQueue(t, &e.owner, nil).str("queue_id")

	r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"*hi*"}}, &e.alice)
	id := uint64(r.body["id"].(float64))
	for _, c := range []struct {
		who     *account
		queue   string
		flags   []string
		content string
	}{{&e.alice, alice, []string{"read"}, "*hi*"}, {&e.bob, bob, []string{}, "<p><em>hi</em></p>"}} {
		events, eventID := e.pollNow(t, c.who, c.queue, -1), 0.0
		if c.who == &e.alice { // she started the topic, which follows it for her first
			events, eventID = afterAutomaticPolicy(t, e, events, "t", policyFollowed), 2
		}
		if len(events) != 1 || events[0]["type"] != "message" || events[0]["id"] != eventID {
			t.Fatalf("%s: got %v, want one message event with id %v", c.who.Email, events, eventID)
		}
		m := events[0]["message"].(map[string]any)
		if m["id"] != float64(id) || m["content"] != c.content || !jsonEqual(events[0]["flags"], c.flags) {
			t.Errorf("%s: got message %v flags %v, want content %q flags %v", c.who.Email, m, events[0]["flags"], c.content, c.flags)
		}
		if _, ok := m["flags"]; ok {
			t.Errorf("the message object of an event carries flags")
		}
	}
	if events := e.pollNow(t, &e.owner, owner, -1); len(events) != 0 {
		t.Errorf("non-subscriber's queue: got %v, want nothing", events)
	}

	// Marking the channel read: one event with exactly the ids that changed.
	r = e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"again"}}, &e.alice)
	second := uint64(r.body["id"].(float64))
	e.pollNow(t, &e.bob, bob, 0)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {strconv.FormatUint(e.general.ID, 10)}}, &e.bob))
	events := e.pollNow(t, &e.bob, bob, 1) // acknowledge both message events
	want := map[string]any{"type": "update_message_flags", "op": "add", "operation": "add", "flag": "read", "messages": toAny([]uint64{id, second}), "all": false, "id": 2.0}
	if len(events) != 1 || !jsonEqual(events[0], want) {
		t.Errorf("after mark_stream_as_read: got %v, want %v", events, want)
	}
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {strconv.FormatUint(e.general.ID, 10)}}, &e.bob))
	if events := e.pollNow(t, &e.bob, bob, 2); len(events) != 0 {
		t.Errorf("marking an already-read channel: got %v, want no event", events)
	}

	// Removing read carries message_details; mark_all_as_read says all.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(id)}, "op": {"remove"}, "flag": {"read"}}, &e.bob))
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/mark_all_as_read", nil, &e.bob))
	events = e.pollNow(t, &e.bob, bob, 2)
	if len(events) != 2 || events[0]["op"] != "remove" || events[0]["message_details"] == nil || events[1]["all"] != true {
		t.Errorf("remove read then mark all: got %v", events)
	}

	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"general"}]`}}, &e.owner))
	wantAPISuccess(t, e.request(t, http.MethodDelete, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`["general"]`}}, &e.owner))
	events = e.pollNow(t, &e.owner, owner, -1)
	if len(events) != 2 || events[0]["type"] != "subscription" || events[0]["op"] != "add" || events[1]["op"] != "remove" {
		t.Errorf("owner's subscription events: got %v", events)
	}
}

func TestEvents_QueueErrorsAndLimits(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.alice, nil).str("queue_id")
	for _, c := range []struct {
		who *account
		id  string
	}{{&e.alice, "nope"}, {&e.bob, queue}} { // another user's queue does not exist either
		r := e.request(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {c.id}, "dont_block": {"true"}}, c.who)
		wantAPIError(t, r, 400, "BAD_EVENT_QUEUE_ID", "Bad event queue ID: "+c.id)
		if r.body["queue_id"] != c.id {
			t.Errorf("queue_id in the error: got %v, want %s", r.body["queue_id"], c.id)
		}
	}
	wantAPIError(t, e.request(t, http.MethodDelete, "/api/v1/events", url.Values{"queue_id": {queue}}, &e.bob), 400, "BAD_EVENT_QUEUE_ID", "Bad event queue ID: "+queue)
	wantAPISuccess(t, e.request(t, http.MethodDelete, "/api/v1/events", url.Values{"queue_id": {queue}}, &e.alice))
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {queue}}, &e.alice), 400, "BAD_EVENT_QUEUE_ID", "Bad event queue ID: "+queue)

	// Ten idle minutes expire a queue.
	hub := e.server.events
	clock := time.Now()
	hub.now = func() time.Time { return clock }
	queue = e.registerQueue(t, &e.alice, nil).str("queue_id")
	clock = clock.Add(queueIdleTimeout - time.Second)
	hub.expire()
	e.pollNow(t, &e.alice, queue, -1) // a poll keeps it alive
	clock = clock.Add(queueIdleTimeout)
	hub.expire()
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {queue}, "dont_block": {"true"}}, &e.alice), 400, "BAD_EVENT_QUEUE_ID", "Bad event queue ID: "+queue)

	// One queue too many drops the oldest.
	var queues []string
	for range maxQueuesPerUser + 1 {
		clock = clock.Add(time.Second)
		queues = append(queues, e.registerQueue(t, &e.bob, nil).str("queue_id"))
	}
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {queues[0]}, "dont_block": {"true"}}, &e.bob), 400, "BAD_EVENT_QUEUE_ID", "Bad event queue ID: "+queues[0])
	e.pollNow(t, &e.bob, queues[1], -1)

	// A queue that falls maxEventsPerQueue behind is dropped.
	for range maxEventsPerQueue + 1 {
		hub.publish("heartbeat", ownedBy(e.bob.ID), func(*eventQueue) event { return event{"type": "heartbeat"} })
	}
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {queues[1]}, "dont_block": {"true"}}, &e.bob), 400, "BAD_EVENT_QUEUE_ID", "Bad event queue ID: "+queues[1])
}

func TestEvents_LongPollWakesOnSendAndEndsOnShutdown(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	done := make(chan response, 1)
	go func() {
		req := buildRequest(t, queryString, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {queue}, "last_event_id": {"-1"}})
		req.SetBasicAuth(e.bob.Email, e.bob.key)
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, req)
		var body map[string]any
		json.Unmarshal(rec.Body.Bytes(), &body)
		done <- response{status: rec.Code, body: body}
	}()
	untilPollsWait(t, e.server.events, e.bob.ID, queue, 1)
	start := time.Now()
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"x"}}, &e.alice))
	select {
	case r := <-done:
		t.Logf("a send woke the waiting poll %v after the send returned", time.Since(start))
		if events := r.body["events"].([]any); len(events) != 1 {
			t.Errorf("woken poll: got %v, want the message event", r.body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a send did not wake the waiting poll within 5 s")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan bool)
	go func() {
		_, ok, _ := e.server.events.poll(ctx, e.bob.ID, queue, 0, false, nil)
		ended <- ok
	}()
	untilPollsWait(t, e.server.events, e.bob.ID, queue, 1)
	e.server.events.close()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting poll did not end when the hub closed")
	}
}

// untilPollsWait waits until n polls wait on the queue: a test that then
// wakes them proves the wake-up, where a sleep might let the poll start
// after the event it should have waited for.
func untilPollsWait(t *testing.T, hub *eventHub, userID uint64, queue string, n int) {
	t.Helper()
	q, ok := hub.queue(userID, queue)
	if !ok {
		t.Fatalf("queue %s: not found", queue)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		q.mu.Lock()
		polls := q.polls
		q.mu.Unlock()
		if polls == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s: %d polls waiting after 5 s, want %d", queue, polls, n)
		}
	}
}

// waitPoll starts a long poll in the hub and answers its result later.
func waitPoll(hub *eventHub, userID uint64, queue string, last int64) chan bool {
	done := make(chan bool, 1)
	go func() {
		_, ok, _ := hub.poll(context.Background(), userID, queue, last, false, nil)
		done <- ok
	}()
	return done
}

func within(t *testing.T, what string, done chan bool, want bool) {
	t.Helper()
	select {
	case ok := <-done:
		if ok != want {
			t.Errorf("%s: poll answered queue-exists %v, want %v", what, ok, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the poll did not answer within 5 s", what)
	}
}

func TestEvents_AReconnectedPollWakesAndRemovalEndsIt(t *testing.T) {
	e := newTestEnv(t)
	hub := e.server.events
	queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	first := waitPoll(hub, e.bob.ID, queue, -1)
	untilPollsWait(t, hub, e.bob.ID, queue, 1)
	second := waitPoll(hub, e.bob.ID, queue, -1) // the client reconnected
	within(t, "the poll a reconnection replaced", first, true)
	untilPollsWait(t, hub, e.bob.ID, queue, 1)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"x"}}, &e.alice))
	within(t, "the reconnected poll", second, true) // it must not wait 50 s

	waiting := waitPoll(hub, e.bob.ID, queue, 0)
	untilPollsWait(t, hub, e.bob.ID, queue, 1)
	wantAPISuccess(t, e.request(t, http.MethodDelete, "/api/v1/events", url.Values{"queue_id": {queue}}, &e.bob))
	within(t, "poll on a deleted queue", waiting, false)
}

func TestEvents_PollingKeepsAQueueAliveAndHeartbeats(t *testing.T) {
	e := newTestEnv(t)
	hub := e.server.events
	hub.pollTimeout = 200 * time.Millisecond
	clock := time.Now()
	var mu sync.Mutex
	hub.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	events := make(chan []json.RawMessage, 1)
	go func() {
		got, _, _ := hub.poll(context.Background(), e.bob.ID, queue, -1, false, nil)
		events <- got
	}()
	untilPollsWait(t, hub, e.bob.ID, queue, 1)
	mu.Lock()
	clock = clock.Add(2 * queueIdleTimeout) // long idle, but a poll is waiting
	mu.Unlock()
	hub.expire()
	select {
	case got := <-events:
		var heartbeat map[string]any
		if len(got) != 1 || json.Unmarshal(got[0], &heartbeat) != nil || heartbeat["type"] != "heartbeat" || heartbeat["id"] != 0.0 {
			t.Errorf("after the poll timeout: got %s, want one heartbeat with id 0", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no heartbeat after the poll timeout")
	}
}

func TestEvents_InCommitOrderUnderConcurrentSends(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	var wg sync.WaitGroup
	for range 60 {
		wg.Go(func() {
			e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"x"}}, &e.alice)
		})
	}
	wg.Wait()
	var ids []uint64
	for _, ev := range e.pollNow(t, &e.bob, queue, -1) {
		ids = append(ids, uint64(ev["message"].(map[string]any)["id"].(float64)))
	}
	if len(ids) != 60 || !slices.IsSorted(ids) {
		t.Errorf("message events: got %v, want 60 in id order", ids)
	}
}

func TestEvents_AQueueRegisteredDuringAnUnheardChangeIsDropped(t *testing.T) {
	e := newTestEnv(t)
	e.sendAs(t, e.alice, e.general, "t")
	var raced string
	hooks := e.st.hooks.Load()
	e.st.hooks.Store(&storeHooks{changes: hooks.changes, listening: func(userID uint64) (bool, uint64) {
		heard, seq := hooks.listening(userID) // nobody listens yet...
		q := &eventQueue{userID: e.bob.ID}    // ...and a client registers meanwhile
		e.server.events.register(q)
		raced = q.id
		return heard, seq
	}})
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {strconv.FormatUint(e.general.ID, 10)}}, &e.bob))
	e.st.hooks.Store(hooks)
	r := e.request(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {raced}, "dont_block": {"true"}}, &e.bob)
	wantAPIError(t, r, 400, "BAD_EVENT_QUEUE_ID", "Bad event queue ID: "+raced)
}

func TestEvents_AllPublicStreamsAndByteBudget(t *testing.T) {
	e := newTestEnv(t)
	all := e.registerQueue(t, &e.owner, url.Values{"all_public_streams": {"true"}}).str("queue_id")
	mine := e.registerQueue(t, &e.owner, nil).str("queue_id")
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"x"}}, &e.alice))
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"secret"}, "topic": {"t"}, "content": {"x"}}, &e.alice))
	events := e.pollNow(t, &e.owner, all, -1)
	if len(events) != 1 || !jsonEqual(events[0]["flags"], []string{}) {
		t.Errorf("all_public_streams queue: got %v, want the public message only, without flags (Zulip's for a non-recipient)", events)
	}
	if got := e.pollNow(t, &e.owner, mine, -1); len(got) != 0 {
		t.Errorf("ordinary queue of a non-subscriber: got %v, want nothing", got)
	}
	big := strings.Repeat("x", 9000)
	for range maxQueueBytes/9000 + 1 { // each event is over 9000 bytes
		wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {big}}, &e.alice))
	}
	r := e.request(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {all}, "dont_block": {"true"}}, &e.owner)
	wantAPIError(t, r, 400, "BAD_EVENT_QUEUE_ID", "Bad event queue ID: "+all)
}

// An event queue's narrow is the fetch narrow: the same terms pick the
// same messages live as GET /messages picks afterwards; operators Zulip
// cannot filter live are refused at register, in Zulip's words.
func TestEvents_QueueNarrowPicksWhatTheFetchNarrowPicks(t *testing.T) {
	e := newTestEnv(t)
	messageOnly := func(narrow string) url.Values {
		return url.Values{"event_types": {`["message"]`}, "narrow": {narrow}}
	}
	narrows := []string{
		`[["channel","GENERAL"],["topic","lunch"]]`,
		`[["is","unread"]]`,
		`[["sender","Bob@example.com"]]`,
		`[{"operator":"stream","operand":"general"},{"operator":"subject","operand":"dinner"}]`,
	}
	queues := make([]string, len(narrows))
	for i, n := range narrows {
		queues[i] = e.registerQueue(t, &e.alice, messageOnly(n)).str("queue_id")
	}
	e.sendAs(t, e.bob, e.general, "lunch")
	e.sendAs(t, e.bob, e.general, "dinner")
	e.sendAs(t, e.alice, e.general, "Lunch")
	if err := e.st.addSubscriptionForTest(e.bob.user, e.secret); err != nil {
		t.Fatal(err)
	}
	e.sendAs(t, e.bob, e.secret, "lunch")
	wantLiveAsFetched(t, e, &e.alice, narrows, queues)
	for _, c := range []struct{ narrow, msg string }{
		{`[["search","lunch"]]`, "Operator search not supported."},
		{`[["id","1"]]`, "Operator id not supported."},
		{`[["is","followed"]]`, "Operand followed not supported."},
	} {
		r := e.requestAs(t, multipartForm, http.MethodPost, "/api/v1/register", messageOnly(c.narrow), &e.alice)
		wantAPIError(t, r, 400, "BAD_REQUEST", c.msg)
	}
}

// A topic narrow folds case one way, the topic index's, live and fetched
// alike: "ſ" (long s) is not "s" there, and "K" (the Kelvin sign) is "k",
// so a queue narrowed to a topic receives exactly the messages that
// GET /messages answers for the same narrow.
func TestEvents_QueueTopicNarrowFoldsAsTheFetchNarrow(t *testing.T) {
	e := newTestEnv(t)
	topics := []string{"s", "S", "ſ", "k", "K", "K"}
	var narrows, queues []string
	for _, topic := range topics { // with a channel (the topic index) and without (the filter)
		operand, _ := json.Marshal(topic)
		for _, n := range []string{`[["channel","general"],["topic",` + string(operand) + `]]`, `[["topic",` + string(operand) + `]]`} {
			narrows = append(narrows, n)
			queues = append(queues, e.registerQueue(t, &e.alice, url.Values{"event_types": {`["message"]`}, "narrow": {n}}).str("queue_id"))
		}
	}
	for _, topic := range topics {
		e.sendAs(t, e.bob, e.general, topic)
	}
	wantLiveAsFetched(t, e, &e.alice, narrows, queues)
}

// wantLiveAsFetched checks that each queue, narrowed by the narrow of
// the same place, has received as message events exactly the messages,
// not none, that GET /messages answers for that narrow.
func wantLiveAsFetched(t *testing.T, e *testEnv, who *account, narrows, queues []string) {
	t.Helper()
	for i, n := range narrows {
		var live []uint64
		for _, ev := range e.pollNow(t, who, queues[i], -1) {
			if ev["type"] == "message" {
				live = append(live, uint64(ev["message"].(map[string]any)["id"].(float64)))
			}
		}
		_, fetched := e.page(t, who, rangeParams("oldest", 0, 100, n))
		if !slices.Equal(live, fetched) || len(live) == 0 {
			t.Errorf("narrow %s: live events got %v, GET /messages %v, want the same, not empty", n, live, fetched)
		}
	}
}

func TestEvents_MessageEventEchoesLocalIDToTheSendersQueueOnly(t *testing.T) {
	e := newTestEnv(t)
	sending := e.registerQueue(t, &e.bob, nil).str("queue_id")
	otherTab := e.registerQueue(t, &e.bob, nil).str("queue_id")
	alice := e.registerQueue(t, &e.alice, nil).str("queue_id")
	r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {strconv.FormatUint(e.general.ID, 10)}, "topic": {"t"},
		"content": {"hi"}, "queue_id": {sending}, "local_id": {"0.01"}, "read_by_sender": {"true"}}, &e.bob)
	wantAPISuccess(t, r)
	if want := `{"result":"success","msg":"","id":1,"automatic_new_visibility_policy":3}` + "\n"; r.raw != want { // the topic is new: followed
		t.Errorf("answer: got %s, want %s", r.raw, want)
	}
	for _, c := range []struct {
		who     *account
		queue   string
		localID any
		flags   []string
	}{
		{&e.bob, sending, "0.01", []string{"read"}},
		{&e.bob, otherTab, nil, []string{"read"}},
		{&e.alice, alice, nil, []string{}},
	} {
		events := e.pollNow(t, c.who, c.queue, -1)
		if c.who == &e.bob { // the sender of a new topic: followed first
			events = afterAutomaticPolicy(t, e, events, "t", policyFollowed)
		}
		if len(events) != 1 || events[0]["type"] != "message" {
			t.Fatalf("%s: got %v, want one message event", c.who.Email, events)
		}
		if got, present := events[0]["local_message_id"]; got != c.localID || present != (c.localID != nil) {
			t.Errorf("%s queue %s: local_message_id got %v (present %v), want %v", c.who.Email, c.queue, got, present, c.localID)
		}
		if !jsonEqual(events[0]["flags"], c.flags) {
			t.Errorf("%s: flags got %v, want %v", c.who.Email, events[0]["flags"], c.flags)
		}
	}
	// Naming another user's queue echoes nothing there.
	e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"},
		"content": {"hi"}, "queue_id": {alice}, "local_id": {"7"}, "read_by_sender": {"false"}}, &e.bob)
	events := e.pollNow(t, &e.alice, alice, 0)
	if len(events) != 1 {
		t.Fatalf("alice: got %v, want the second message", events)
	}
	if _, present := events[0]["local_message_id"]; present {
		t.Errorf("another user's queue got local_message_id: %v", events[0])
	}
	// With read_by_sender=false the message is unread for its subscribed
	// sender too.
	if events := e.pollNow(t, &e.bob, sending, 2); len(events) != 1 || !jsonEqual(events[0]["flags"], []string{}) { // 0 and 1 followed the topic
		t.Errorf("bob's second message: got %v, want it unread for him (no flags)", events)
	}
}

func TestEvents_EmptyTopicShownByNameToQueuesWithoutTheCapability(t *testing.T) {
	e := newTestEnv(t)
	capable := e.registerQueue(t, &e.alice, url.Values{"client_capabilities": {`{"empty_topic_name":true}`}}).str("queue_id")
	legacy := e.registerQueue(t, &e.alice, url.Values{"client_capabilities": {`{"empty_topic_name":false}`}}).str("queue_id")
	none := e.registerQueue(t, &e.alice, nil).str("queue_id")
	narrowed := e.registerQueue(t, &e.alice, url.Values{"narrow": {`[["topic","general chat"]]`}}).str("queue_id")
	narrowedCapable := e.registerQueue(t, &e.alice, url.Values{"narrow": {`[["topic",""]]`}, "client_capabilities": {`{"empty_topic_name":true}`}}).str("queue_id")
	id := e.sendAs(t, e.bob, e.general, "")
	e.sendAs(t, e.bob, e.general, "named")
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(id)}, "op": {"add"}, "flag": {"read"}}, &e.alice))
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(id)}, "op": {"remove"}, "flag": {"read"}}, &e.alice))
	for _, c := range []struct {
		queue, topic string
		messages     int
	}{{capable, "", 2}, {legacy, "general chat", 2}, {none, "general chat", 2}, {narrowed, "general chat", 1}, {narrowedCapable, "", 1}} {
		events := e.pollNow(t, &e.alice, c.queue, -1)
		var subjects []string
		var details map[string]any
		for _, ev := range events {
			switch {
			case ev["type"] == "message":
				subjects = append(subjects, ev["message"].(map[string]any)["subject"].(string))
			case ev["type"] == "update_message_flags" && ev["op"] == "remove":
				details, _ = ev["message_details"].(map[string]any)
				if ev["all"] != false || ev["flag"] != "read" {
					t.Errorf("remove event: got %v, want all false and flag read", ev)
				}
			}
		}
		if len(subjects) != c.messages || subjects[0] != c.topic {
			t.Errorf("queue %s: subjects got %q, want %d starting %q", c.queue, subjects, c.messages, c.topic)
		}
		want := map[string]any{strconv.FormatUint(id, 10): map[string]any{"type": "stream", "stream_id": float64(e.general.ID), "topic": c.topic, "unmuted_stream_msg": true}}
		if !jsonEqual(details, want) {
			t.Errorf("queue %s: message_details got %v, want %v", c.queue, details, want)
		}
	}
}

// A poll answers its events as the envelope writes every answer: without
// HTML escaping (as Zulip's orjson writes them), as GET /messages shows
// the same message.
func TestEvents_PollWritesEventsAsTheEnvelopeWritesAnswers(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"a <b> & c"}, "content": {"x < y & z"}}, &e.alice))
	r := e.request(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {queue}, "dont_block": {"true"}}, &e.bob)
	wantAPISuccess(t, r)
	for _, want := range []string{`"content":"x < y & z"`, `"subject":"a <b> & c"`, `"queue_id":"` + queue + `"`} {
		if !strings.Contains(r.raw, want) {
			t.Errorf("poll answer: got %s, want it to hold %s", r.raw, want)
		}
	}
}

// BenchmarkEvents_WaitingPollMemory measures what a queue and a poll
// waiting on it cost zulite, through the whole HTTP stack on real
// connections: parked (the server as serve configures it, without TLS)
// and waiting in its handler (as an HTTP/2 poll, or one where polls do
// not park, waits): the heap and the goroutine stacks held, after a
// collection, per queue registered and per poll waiting. The polls'
// clients are raw connections of this process, whose sockets (about 0.3
// KiB each) are counted in; run it with -benchtime=1x.
func BenchmarkEvents_WaitingPollMemory(b *testing.B) {
	for _, parked := range []bool{true, false} {
		name := "in_handler"
		if parked {
			name = "parked"
		}
		b.Run(name, func(b *testing.B) {
			if parked && !conns.CanPark {
				b.Skip("polls park on Linux only")
			}
			benchmarkWaitingPollMemory(b, parked)
		})
	}
}

func benchmarkWaitingPollMemory(b *testing.B, parked bool) {
	const users, perUser = 50, maxQueuesPerUser // 1,000 queues
	for b.Loop() {
		e := newTestEnv(b)
		var srv *http.Server
		var listening net.Listener
		if parked {
			srv, listening = e.server.httpServer(mustListen(b), options{MaxConns: 4 * users * perUser, ParkPolls: true}, nil, discardLogger())
		} else {
			limited := conns.NewLimiter(mustListen(b), 4*users*perUser, func(netip.Addr) bool { return true })
			srv = &http.Server{Handler: conns.Serving(e.handler, 30*time.Second), ConnContext: conns.ConnContext, ReadHeaderTimeout: 10 * time.Second,
				ReadTimeout: 30 * time.Second, WriteTimeout: 90 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 64 << 10,
				ConnState: limited.ConnState}
			listening = limited
		}
		go srv.Serve(listening)
		measure := func() (heap, stack uint64) {
			var m runtime.MemStats
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&m)
			return m.HeapInuse, m.StackInuse
		}
		heap0, _ := measure()
		type poll struct {
			a     account
			queue string
		}
		var polls []poll
		for i := range users {
			u, key := mustCreateUser(b, e.st, fmt.Sprintf("poller%d@example.com", i), roleMember, false)
			for range perUser {
				req := httptest.NewRequest(http.MethodPost, "/api/v1/register", strings.NewReader(url.Values{"apply_markdown": {"true"}, "event_types": {`["message"]`}}.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.SetBasicAuth(u.Email, key)
				rec := httptest.NewRecorder()
				e.handler.ServeHTTP(rec, req)
				var body struct {
					QueueID string `json:"queue_id"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.QueueID == "" {
					b.Fatalf("register: %d %s", rec.Code, rec.Body)
				}
				polls = append(polls, poll{account{u, key}, body.QueueID})
			}
		}
		heap1, stack1 := measure()
		var conns []net.Conn
		for _, p := range polls {
			c, err := net.Dial("tcp", listening.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodGet, "http://zulite.test/api/v1/events?queue_id="+p.queue+"&last_event_id=-1", nil)
			req.SetBasicAuth(p.a.Email, p.a.key)
			if err := req.Write(c); err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c)
		}
		for waiting := 0; waiting < len(polls); { // every poll waits
			time.Sleep(10 * time.Millisecond)
			waiting = 0
			e.server.events.mu.RLock()
			for _, q := range e.server.events.queues {
				q.mu.Lock()
				waiting += q.polls
				q.mu.Unlock()
			}
			e.server.events.mu.RUnlock()
		}
		heap2, stack2 := measure()
		n := float64(len(polls))
		kib := func(a, b uint64) float64 { return (float64(b) - float64(a)) / 1024 / n }
		b.ReportMetric(kib(heap0, heap1), "heap-KiB/queue")
		b.ReportMetric(kib(heap1, heap2), "heap-KiB/poll")
		b.ReportMetric(kib(stack1, stack2), "stack-KiB/poll")
		b.ReportMetric(kib(heap1, heap2)+kib(stack1, stack2), "KiB/poll")
		for _, c := range conns {
			c.Close()
		}
		stopServing(e.server, srv)
	}
}

func mustListen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// A new account is told to every queue that hears realm_user, as Zulip's
// realm_user add: the person as register lists them, with avatar_url
// null for a queue with client_gravatar.
func TestEvents_ANewAccountIsToldToEveryone(t *testing.T) {
	e := newTestEnv(t)
	plain := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["realm_user"]`}, "client_gravatar": {"false"}}).str("queue_id")
	gravatar := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["realm_user"]`}, "client_gravatar": {"true"}}).str("queue_id")
	r := e.request(t, http.MethodPost, "/api/v1/users", url.Values{"email": {"carol@example.com"}, "password": {"a long password"}, "full_name": {"Carol"}}, &e.owner)
	wantAPISuccess(t, r)
	carol := r.body["user_id"].(float64)
	for _, c := range []struct {
		who    *account
		queue  string
		avatar bool
	}{{&e.bob, plain, true}, {&e.alice, gravatar, false}} {
		events := e.pollNow(t, c.who, c.queue, -1)
		if len(events) != 1 || events[0]["type"] != "realm_user" || events[0]["op"] != "add" {
			t.Fatalf("%s's queue: got %v, want one realm_user add", c.who.Email, events)
		}
		person := events[0]["person"].(map[string]any)
		if person["user_id"] != carol || person["email"] != "carol@example.com" || person["full_name"] != "Carol" || person["is_active"] != true {
			t.Errorf("%s's queue: got person %v, want carol", c.who.Email, person)
		}
		if _, hasURL := person["avatar_url"].(string); hasURL != c.avatar {
			t.Errorf("%s's queue: avatar_url %v, want a URL: %v", c.who.Email, person["avatar_url"], c.avatar)
		}
	}
}

// A poll waiting in its handler (HTTP/2, or where polls cannot park) is
// answered, with what its queue holds, when a newer poll reaches its
// queue; the newer one waits in its place.
func TestEvents_ANewerPollAnswersTheOneWaitingInItsHandler(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	hub := e.server.events
	type answer struct {
		events int
		found  bool
	}
	poll := func() chan answer {
		done := make(chan answer, 1)
		go func() {
			events, ok, _ := hub.poll(context.Background(), e.bob.ID, queue, -1, false, nil)
			done <- answer{len(events), ok}
		}()
		return done
	}
	first := poll()
	untilPollsWait(t, hub, e.bob.ID, queue, 1)
	second := poll()
	select {
	case a := <-first:
		if !a.found || a.events != 0 {
			t.Errorf("the replaced poll: got %d events (found %v), want none, found", a.events, a.found)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first poll still waits after a second reached its queue")
	}
	untilPollsWait(t, hub, e.bob.ID, queue, 1)
	select {
	case <-second:
		t.Fatal("the second poll answered with nothing to answer")
	default:
	}
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"x"}}, &e.alice))
	select {
	case a := <-second:
		if a.events != 1 {
			t.Errorf("the newer poll woken by a send: got %d events, want 1", a.events)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a send did not wake the newer poll")
	}
}
