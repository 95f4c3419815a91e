package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// listeners makes n accounts subscribed to general, each with perUser
// queues (as apps register them, rendered content), and answers them
// with their queues.
func (e *testEnv) listeners(t testing.TB, n, perUser int) (accounts []account, queues [][]string) {
	t.Helper()
	for i := range n {
		u, key := mustCreateUser(t, e.st, fmt.Sprintf("listener%d@example.com", i), roleMember, false)
		mustSubscribe(t, e.st, u, "general")
		a := account{u, key}
		var mine []string
		for range perUser {
			q := &eventQueue{userID: u.ID, applyMarkdown: true}
			e.server.events.register(q)
			mine = append(mine, q.id)
		}
		accounts, queues = append(accounts, a), append(queues, mine)
	}
	return accounts, queues
}

// A message to a big channel is held once, however many queues hold it:
// the total bound counts shared bytes once, so the channel's readers keep
// their queues (each holding what it alone would answer).
func TestEvents_ABigChannelDoesNotEvictItsReadersQueues(t *testing.T) {
	t.Parallel() // independent of the other tests: its own store or server
	e := newTestEnv(t)
	accounts, queues := e.listeners(t, 12, maxQueuesPerUser) // 240 queues
	big := strings.Repeat("x", maxMessageLength-100)
	const sends = 5 // 5 × 240 × ~10 KB: 12 MB if each queue held its own copy, over the 8 MiB bound
	var sent []uint64
	for range sends {
		r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {big}}, &e.alice)
		wantAPISuccess(t, r)
		sent = append(sent, uint64(r.body["id"].(float64)))
	}
	for i, a := range accounts {
		for _, q := range queues[i] {
			r := e.request(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {q}, "last_event_id": {"-1"}, "dont_block": {"true"}}, &a)
			if r.status != http.StatusOK {
				t.Fatalf("%s queue %s: got %d %v, want its %d messages", a.Email, q, r.status, r.body["code"], sends)
			}
			var got []uint64
			for _, x := range r.body["events"].([]any) {
				ev := x.(map[string]any)
				if ev["type"] == "message" { // later listeners' joining is told too
					got = append(got, uint64(ev["message"].(map[string]any)["id"].(float64)))
				}
			}
			if !slices.Equal(got, sent) {
				t.Fatalf("%s queue %s: got messages %v, want %v", a.Email, q, got, sent)
			}
		}
	}
	// A queue still answers for what it alone holds: five of these fill it.
	for range maxQueueBytes/(maxMessageLength-100) + 1 - sends {
		wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {big}}, &e.alice))
	}
	r := e.request(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {queues[0][0]}, "last_event_id": {"-1"}, "dont_block": {"true"}}, &accounts[0])
	wantAPIError(t, r, 400, "BAD_EVENT_QUEUE_ID", "Bad event queue ID: "+queues[0][0])
}

// A message is encoded once per rendering, not once per queue: a send to
// 1,000 listening queues allocates little more than a send to none.
func TestEvents_AMessageIsEncodedOnceForEveryQueue(t *testing.T) {
	e := newTestEnv(t)
	big := strings.Repeat("y", maxMessageLength-100)
	send := func() uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {big}}, &e.alice))
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	// The least of three sends: TotalAlloc counts every goroutine's
	// allocations, and a background one may land in any single send.
	least := func() uint64 { return min(send(), send(), send()) }
	send() // the first send reads the channel's pages in
	none := least()
	// 1,000 queues: what other goroutines allocate meanwhile is spread
	// over many, and a copy of the message per queue is ten times over.
	const queues = 50 * maxQueuesPerUser
	e.listeners(t, 50, maxQueuesPerUser)
	listened := least()
	perQueue := (float64(listened) - float64(none)) / queues
	t.Logf("a send of a %d-byte message allocates %d bytes with no queue listening, %d with %d: %.0f bytes a queue", len(big), none, listened, queues, perQueue)
	if perQueue > 1000 {
		t.Errorf("a send allocates %.0f bytes more for each listening queue, want under 1000 (the message is %d bytes: it is not to be copied per queue)", perQueue, len(big))
	}
}

// The committer asks the hub whether a user listens (to collect a flag
// change's ids) without waiting for a fan-out: a write by anyone commits
// while the hub is busy.
func TestEvents_AWriteNeverWaitsForAFanOut(t *testing.T) {
	e := newTestEnv(t)
	e.registerQueue(t, &e.alice, nil)
	e.sendAs(t, e.bob, e.general, "t") // unread for alice
	hub := e.server.events
	hub.mu.Lock() // a fan-out that takes its time
	locked := true
	defer func() {
		if locked {
			hub.mu.Unlock()
		}
	}()
	marked := make(chan response, 1)
	go func() {
		marked <- e.request(t, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {strconv.FormatUint(e.general.ID, 10)}}, &e.alice)
	}()
	time.Sleep(100 * time.Millisecond) // the mark reaches the committer
	stored := make(chan error, 1)
	go func() {
		stored <- e.st.addPushToken(e.bob.ID, pushToken{Kind: pushAPNs, Token: "0a0b", AppID: "org.zulip.Zulip"})
	}()
	select {
	case err := <-stored:
		if err != nil {
			t.Errorf("bob's write: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("bob's write waited 5 s for the hub: the committer waits for fan-out")
	}
	hub.mu.Unlock()
	locked = false
	select {
	case r := <-marked:
		wantAPISuccess(t, r)
	case <-time.After(5 * time.Second):
		t.Fatal("alice's mark did not answer once the hub was free")
	}
}

// BenchmarkEvents_PublishMessage publishes a channel message (500 bytes)
// as the publisher does after its commit: to 2 recipients with no other
// queue, to 2 recipients among 10,000 other queues (500 users × 20),
// whose cost should not grow with them, and to 10,000 recipient queues.
// Queues are drained, untimed, every 10 messages (a queue dropped for
// falling behind fails the benchmark).
func BenchmarkEvents_PublishMessage(b *testing.B) {
	for _, c := range []struct {
		name              string
		recipients, other int // users, each with maxQueuesPerUser queues
	}{{"2 recipients", 2, 0}, {"2 recipients among 10000 queues", 2, 500}, {"10000 recipient queues", 500, 0}} {
		b.Run(c.name, func(b *testing.B) {
			e := newTestEnv(b)
			hub := e.server.events
			type listener struct {
				user  uint64
				queue string
				last  int64
			}
			var queues []*listener
			var ids []uint64
			for u := range uint64(c.recipients + c.other) {
				userID := 1000 + u
				if int(u) < c.recipients {
					ids = append(ids, userID)
				}
				for range maxQueuesPerUser {
					q := &eventQueue{userID: userID, applyMarkdown: true, types: []string{"message"}}
					hub.register(q)
					queues = append(queues, &listener{userID, q.id, -1})
				}
			}
			content := strings.Repeat("word ", 100)
			id := uint64(0)
			for b.Loop() {
				id++
				e.server.publishChange(messageSent{sentMessage: sentMessage{message: message{ID: id, SenderID: e.alice.ID, ChannelID: e.general.ID, Topic: "t", Content: content, Timestamp: 1700000000},
					Channel: e.general, recipients: &recipients{read: func() []uint64 { return ids }}, ReadBySender: true}, Sender: e.alice.user}, func() {})
				if id%10 == 0 {
					b.StopTimer()
					for _, l := range queues {
						events, ok, _ := hub.poll(context.Background(), l.user, l.queue, l.last, true, nil)
						if !ok {
							b.Fatalf("queue %s was dropped", l.queue)
						}
						l.last += int64(len(events))
					}
					b.StartTimer()
				}
			}
		})
	}
}

// A send to a big channel answers once the sender's own queues have the
// message, not after everyone's: here a reader's queue is held (its lock
// taken, as a slow fan-out would hold the send), and the send still
// answers, with its local echo in the sender's queue; the reader gets the
// message once the queue is let go.
func TestEvents_ASendToABigChannelAnswersBeforeItsFanOut(t *testing.T) {
	e := newTestEnv(t)
	var readers []account
	for i := range earlyReleaseRecipients + 1 {
		u, key := mustCreateUser(t, e.st, fmt.Sprintf("crowd%d@example.com", i), roleMember, false)
		mustSubscribe(t, e.st, u, "general")
		readers = append(readers, account{u, key})
	}
	sending := e.registerQueue(t, &e.bob, nil).str("queue_id")
	held := e.registerQueue(t, &readers[0], nil).str("queue_id")
	e.server.events.mu.RLock()
	q := e.server.events.queues[held]
	e.server.events.mu.RUnlock()
	q.mu.Lock()
	answered := make(chan response, 1)
	go func() {
		answered <- e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"},
			"content": {"hi"}, "queue_id": {sending}, "local_id": {"1"}}, &e.bob)
	}()
	select {
	case r := <-answered:
		q.mu.Unlock()
		wantAPISuccess(t, r)
	case <-time.After(5 * time.Second):
		q.mu.Unlock()
		t.Fatal("the send waited for its fan-out to every queue")
	}
	if events := afterAutomaticPolicy(t, e, e.pollNow(t, &e.bob, sending, -1), "t", policyFollowed); len(events) != 1 || events[0]["local_message_id"] != "1" {
		t.Fatalf("the sender's queue: got %v, want the message with its local id", events)
	}
	waitUntil(t, "the held reader's message", func() bool { return len(e.pollNow(t, &readers[0], held, -1)) == 1 })
}

// Over the total bound, what goes is what is least used: the queue
// longest unpolled (a backgrounded phone's), not whichever queue the
// next event lands in. A tab that keeps polling keeps its queue and
// hears every message; the phone that was polled more recently keeps
// its queue and what it holds.
func TestEvents_UnderPressureTheLongestUnpolledQueueGoesNotAnActiveOne(t *testing.T) {
	e := newTestEnv(t)
	hub := e.server.events
	var mu sync.Mutex
	clock := time.Now()
	hub.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }

	phoneA := e.registerQueue(t, &e.alice, nil).str("queue_id") // never polled
	advance(time.Minute)
	phoneB := e.registerQueue(t, &e.bob, nil).str("queue_id") // never polled, a minute younger
	advance(4 * time.Minute)
	tab := e.registerQueue(t, &e.admin, nil).str("queue_id")

	big := strings.Repeat("y", 6000)
	dm := func(to account) uint64 {
		r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"direct"}, "to": {fmt.Sprintf("[%d]", to.ID)}, "content": {big}}, &e.owner)
		wantAPISuccess(t, r)
		return uint64(r.body["id"].(float64))
	}
	for range 5 {
		dm(e.alice)
		dm(e.bob)
	}
	hub.totalBound = hub.totalBytes.Load() + 1000 // what the phones hold fills it: the tab's next message goes over
	last := -1
	var sent, heard []uint64
	for range 10 { // the tab polls after each message, as a web tab does
		sent = append(sent, dm(e.admin))
		advance(time.Second)
		r := e.request(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {tab}, "last_event_id": {strconv.Itoa(last)}, "dont_block": {"true"}}, &e.admin)
		if r.status != http.StatusOK {
			t.Fatalf("the tab that keeps polling: got %d %v %v, want its events", r.status, r.body["code"], r.body["msg"])
		}
		for _, x := range r.body["events"].([]any) {
			ev := x.(map[string]any)
			last = int(ev["id"].(float64))
			if ev["type"] == "message" {
				heard = append(heard, uint64(ev["message"].(map[string]any)["id"].(float64)))
			}
		}
	}
	if !slices.Equal(heard, sent) {
		t.Errorf("the tab heard %v, want every message %v", heard, sent)
	}
	for deadline := time.Now().Add(10 * time.Second); hub.evicted.Load() == 0 && time.Now().Before(deadline); { // relief runs on a goroutine of its own
		time.Sleep(time.Millisecond)
	}
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {phoneA}, "dont_block": {"true"}}, &e.alice), 400, "BAD_EVENT_QUEUE_ID", "Bad event queue ID: "+phoneA)
	if got := e.pollNow(t, &e.bob, phoneB, -1); len(got) != 5 {
		t.Errorf("the phone polled more recently: got %d events, want its 5 messages (the older phone makes room)", len(got))
	}
	if got := hub.evicted.Load(); got != 1 {
		t.Errorf("queues evicted: got %d, want 1", got)
	}
}
