package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Event queues live in memory, as Zulip's do in Tornado: a client
// registers a queue (POST /register), then long-polls it (GET /events).
// A server restart loses every queue, and clients re-register when told
// BAD_EVENT_QUEUE_ID, as Zulip clients do. No storage transaction is ever
// held while a poll waits.
//
// Fan-out costs what its recipients cost, not what the server holds:
// queues are found by their user (and all_public_streams queues in a
// list of their own), and an event is encoded once for every queue that
// gets the same bytes (sharedEvent); what differs per queue (its event
// id, its flags, local_message_id, the empty topic's name) is written
// around those bytes when a poll answers. The committer never waits for
// any of it: committed changes reach the hub from the store's change feed
// (changeFeed.run, changes.go), and from there the queues (fanout.go).
const (
	queueIdleTimeout  = 10 * time.Minute // a queue not polled for this long is dropped
	maxQueuesPerUser  = 20               // registering one more drops the user's oldest
	maxEventsPerQueue = 1000             // a queue that falls this far behind is dropped
	pollTimeout       = 50 * time.Second // a poll with nothing to say answers a heartbeat
)

// event is one event as a client receives it, but for its "id", which
// each queue gives it.
type event map[string]any

// Bounds on what queues may hold, so that idle clients cannot exhaust a
// small device. A queue over its own bound has fallen behind and is
// dropped (its client re-registers). A queue counts the events it holds
// as its poll would answer them; the total counts memory held: the bytes
// that queues share once, and what each queue holds alone
// (queuedEventSize an event), so that a message to a big channel does
// not evict its readers' queues.
//
// Over the total, what goes is what is least used (relieve): whole
// queues that no poll waits on and none reached in queueInUseWindow, the
// longest unpolled first (a backgrounded phone's, typically), until the
// total is back under three quarters of its bound. A queue in use is
// never dropped to make room for others; only when nothing idle is left
// and the total reaches its hard bound is an event refused to the queue
// it lands in, as a queue that fell behind.
const (
	maxQueueBytes      = 256 << 10        // encoded events waiting in one queue
	maxTotalQueueBytes = 8 << 20          // in all queues together: over it, idle queues go
	queueInUseWindow   = 30 * time.Second // a queue polled this recently is in use
)

// eventQueue is one client's queue.
type eventQueue struct {
	id             string
	userID         uint64
	types          []string // event types wanted; nil means all
	narrow         []narrowTerm
	applyMarkdown  bool
	clientGravatar bool
	allPublic      bool // all_public_streams: messages of every public channel
	// emptyTopicName: the client declared the empty_topic_name
	// capability, so it is shown the empty topic as "" rather than as
	// emptyTopicDisplayName.
	emptyTopicName bool
	created        time.Time
	regSeq         uint64 // the user's registration number of this queue

	// userSettingsObject: the client declared the user_settings_object
	// capability, so it hears of settings only in user_settings events.
	userSettingsObject bool
	// simplifiedPresence: the client declared the
	// simplified_presence_events capability, so it hears presence in the
	// modern format (presence.go).
	simplifiedPresence bool
	// streamTyping: the client declared the stream_typing_notifications
	// capability, the only clients told of typing in channels (typing.go).
	streamTyping bool
	// bulkMessageDeletion: the client declared bulk_message_deletion, so
	// it hears of deleted messages in one event with message_ids.
	bulkMessageDeletion bool
	// includeDeactivatedGroups: the client declared
	// include_deactivated_groups, so it keeps deactivated user groups
	// (hears their deactivation as an update, not a remove).
	includeDeactivatedGroups bool
	// archivedChannels: the client declared archived_channels, so it
	// hears of archived channels (is_archived updates) where the others
	// hear of their deletion and creation.
	archivedChannels bool
	// linkifierURLTemplate: the client declared linkifier_url_template,
	// the only clients told of linkifiers (api_linkifiers.go).
	linkifierURLTemplate bool

	offered uint64 // the hub's offer that last reached it (hub.offerMu)

	// mu guards what follows: a queue's polls and the fan-out meet here,
	// not on the hub's lock.
	mu       sync.Mutex
	events   []queuedEvent // ids firstID, firstID+1, ...
	firstID  int64
	bytes    int // the events' size as a poll answers them
	lastPoll time.Time
	polls    int // polls waiting on it, parked ones too; it does not expire meanwhile
	// newest counts the polls that reached it: a poll waiting in its
	// handler whose number is not the newest was replaced (poll).
	newest uint64
	// parked are its polls waiting without a goroutine (parking.go),
	// answered by the waker, their heartbeat timer, a drop or shutdown.
	parked []*parkedPoll
	// wake is made by a poll that waits and closed to wake it: for events
	// (wakeQueues), when the queue is dropped and at shutdown. One channel,
	// not three, for a waiting poll holds a goroutine's place on each.
	wake    chan struct{}
	wakeDue bool // in the hub's list of queues to wake
	woken   bool // woken holding a wake slot, which its first poll to run gives back
	dropped bool // removed or over a bound: it hears nothing more
}

// sharedEvent is an event encoded once for every queue that gets these
// bytes: a JSON object without its closing brace. Each queue adds one of
// tails (its own members: a message's flags, local_message_id) and its
// "id" when a poll answers.
type sharedEvent struct {
	raw   []byte
	tails []string
	// subject is, in a message event whose topic is empty, the offset in
	// raw of the subject's "": queues without the empty_topic_name
	// capability are shown emptyTopicDisplayName there. 0 when none.
	subject int
	holders atomic.Int32 // queues holding it: its bytes count once
}

// queuedEvent is a queue's hold on a shared event; its id is its place.
type queuedEvent struct {
	shared *sharedEvent
	tail   uint8 // index in shared.tails
	named  bool  // show the empty subject as emptyTopicDisplayName
}

// queuedEventSize is what a queue holds alone for an event (a
// queuedEvent), counted in the total.
const queuedEventSize = 16

// displayNameJSON is emptyTopicDisplayName as a JSON string.
var displayNameJSON = func() []byte { b, _ := json.Marshal(emptyTopicDisplayName); return b }()

// heartbeat is the event a poll answers after waiting the poll timeout.
var heartbeat = &sharedEvent{raw: []byte(`{"type":"heartbeat"`), tails: []string{""}}

// encodeEvent encodes e once, for every queue that hears it alike.
func encodeEvent(e event) *sharedEvent {
	raw, err := marshalUnescaped(e)
	if err != nil || len(raw) < 3 { // an event always has a type
		return nil
	}
	return &sharedEvent{raw: raw[:len(raw)-1], tails: []string{""}}
}

// marshalUnescaped encodes v as the envelope encodes answers: without
// HTML escaping, as Zulip (orjson) does.
func marshalUnescaped(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := encodeValue(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// size is the event's length as a poll answers it with the given id.
func (e queuedEvent) size(id int64) int {
	n := len(e.shared.raw) + len(e.shared.tails[e.tail]) + len(`,"id":}`) + digits(id)
	if e.named && e.shared.subject > 0 {
		n += len(displayNameJSON) - len(`""`)
	}
	return n
}

func digits(id int64) int {
	n := 1
	if id < 0 {
		n, id = 2, -id
	}
	for ; id >= 10; id /= 10 {
		n++
	}
	return n
}

// appendJSON writes the event as the queue's client receives it.
func (e queuedEvent) appendJSON(b []byte, id int64) []byte {
	raw := e.shared.raw
	if at := e.shared.subject; e.named && at > 0 {
		b = append(b, raw[:at]...)
		b = append(b, displayNameJSON...)
		raw = raw[at+len(`""`):]
	}
	b = append(b, raw...)
	b = append(b, e.shared.tails[e.tail]...)
	b = append(b, `,"id":`...)
	b = strconv.AppendInt(b, id, 10)
	return append(b, '}')
}

func (q *eventQueue) wants(eventType string) bool {
	return q.types == nil || slices.Contains(q.types, eventType)
}

// eventHub holds every queue of the server. Locks are taken in this
// order: offerMu, mu, a queue's mu; seqMu alone.
type eventHub struct {
	// mu guards the index of queues: by id, by user and the
	// all_public_streams ones. Fan-out and polls only read it.
	mu        sync.RWMutex
	queues    map[string]*eventQueue
	byUser    map[uint64][]*eventQueue // each user's queues, oldest first
	allPublic []*eventQueue            // all_public_streams queues

	offerMu    sync.Mutex // one offer at a time: each reaches a queue once
	offers     uint64     // offers made
	totalBytes atomic.Int64
	// pressure: the total went over maxTotalQueueBytes; whoever added
	// the event relieves it once the queues' locks are let go (relieve).
	pressure   atomic.Bool
	relieving  atomic.Bool   // a relief is under way (relieve)
	lastRelief time.Time     // when the last scan began; the relief's goroutine alone touches it
	evicted    atomic.Uint64 // idle queues dropped to relieve pressure
	totalBound int64         // maxTotalQueueBytes; the hard bound is a quarter more

	// Waking is paced (wakeQueues): at most cap(wakeSlots) woken polls
	// wait for the processor at a time, so that a request that comes in
	// meanwhile (a send, a write) runs after a few of them, not after
	// ten thousand.
	wakeMu    sync.Mutex
	toWake    []*eventQueue
	waking    bool          // a goroutine is waking them
	wakeSlots chan struct{} // a token for each woken poll not yet running
	// Parked polls' answers, and the requests on their connections
	// (parking.go), wait their turn in jobs, run by at most
	// parkedAnswerers goroutines, for the same reason.
	jobsMu    sync.Mutex
	jobs      []func()
	answerers int

	idleTimeout time.Duration
	pollTimeout time.Duration
	now         func() time.Time
	closed      atomic.Bool // at shutdown: polls answer at once

	// seqMu guards what the committer asks (listening), so that it never
	// waits for a fan-out.
	seqMu     sync.Mutex
	regSeq    map[uint64]uint64 // user → registrations so far
	flagHears map[uint64]int    // user → queues that hear update_message_flags
}

func newEventHub() *eventHub {
	return &eventHub{queues: map[string]*eventQueue{}, byUser: map[uint64][]*eventQueue{}, regSeq: map[uint64]uint64{}, flagHears: map[uint64]int{},
		idleTimeout: queueIdleTimeout, pollTimeout: pollTimeout, now: time.Now, totalBound: maxTotalQueueBytes, wakeSlots: make(chan struct{}, wakeSlots)}
}

// wakeSlots bounds the woken polls that wait for a processor at a time.
const wakeSlots = 32

// register makes a queue for the user, dropping their oldest queue when
// they already have the most allowed.
func (h *eventHub) register(q *eventQueue) {
	id := make([]byte, 12)
	rand.Read(id)
	h.mu.Lock()
	defer h.mu.Unlock()
	q.id = hex.EncodeToString(id)
	q.created, q.lastPoll = h.now(), h.now()
	if mine := h.byUser[q.userID]; len(mine) >= maxQueuesPerUser {
		h.removeLocked(mine[0])
	}
	h.seqMu.Lock()
	h.regSeq[q.userID]++
	q.regSeq = h.regSeq[q.userID]
	if q.wants("update_message_flags") {
		h.flagHears[q.userID]++
	}
	h.seqMu.Unlock()
	h.queues[q.id] = q
	h.byUser[q.userID] = append(h.byUser[q.userID], q)
	if q.allPublic {
		h.allPublic = append(h.allPublic, q)
	}
}

// queue finds the user's queue; another user's queue does not exist.
// h.mu is held.
func (h *eventHub) queue(userID uint64, id string) (*eventQueue, bool) {
	q, ok := h.queues[id]
	if !ok || q.userID != userID {
		return nil, false
	}
	return q, true
}

// removeLocked takes a queue out of the index and drops it; h.mu is held.
func (h *eventHub) removeLocked(q *eventQueue) {
	if _, ok := h.queues[q.id]; !ok {
		return
	}
	delete(h.queues, q.id)
	mine := slices.DeleteFunc(h.byUser[q.userID], func(o *eventQueue) bool { return o == q })
	if len(mine) == 0 {
		delete(h.byUser, q.userID)
	} else {
		h.byUser[q.userID] = mine
	}
	if q.allPublic {
		h.allPublic = slices.DeleteFunc(h.allPublic, func(o *eventQueue) bool { return o == q })
	}
	q.mu.Lock()
	h.dropLocked(q)
	q.mu.Unlock()
	if q.wants("update_message_flags") {
		h.seqMu.Lock()
		if h.flagHears[q.userID]--; h.flagHears[q.userID] <= 0 {
			delete(h.flagHears, q.userID)
		}
		h.seqMu.Unlock()
	}
}

// dropLocked lets go of a queue's events and tells its waiting polls it
// is gone; q.mu is held. Whoever drops a queue takes it out of the index
// too (removeLocked), once it may take h.mu.
func (h *eventHub) dropLocked(q *eventQueue) {
	if q.dropped {
		return
	}
	q.dropped = true
	h.releaseLocked(q, len(q.events))
	q.events = nil
	if q.wake != nil {
		close(q.wake)
		q.wake = nil
	}
	parked, _ := h.unparkLocked(q)
	for _, p := range parked {
		h.answer(p, nil, false, false)
	}
}

// releaseLocked lets go of the queue's first n events (acknowledged, or
// the queue dropped); q.mu is held.
func (h *eventHub) releaseLocked(q *eventQueue, n int) {
	held := 0
	for i, e := range q.events[:n] {
		q.bytes -= e.size(q.firstID + int64(i))
		held += queuedEventSize
		if e.shared.holders.Add(-1) == 0 {
			held += len(e.shared.raw)
		}
	}
	h.totalBytes.Add(-int64(held))
	q.firstID += int64(n)
	rest := copy(q.events, q.events[n:])
	clear(q.events[rest:]) // the shared bytes are not kept alive by a stale hold
	q.events = q.events[:rest]
}

// removeAll deletes every queue of the user, ending their waiting polls.
func (h *eventHub) removeAll(userID uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range slices.Clone(h.byUser[userID]) {
		h.removeLocked(q)
	}
}

// remove deletes the user's queue.
func (h *eventHub) remove(userID uint64, id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	q, ok := h.queue(userID, id)
	if ok {
		h.removeLocked(q)
	}
	return ok
}

// removeDropped takes queues dropped for falling behind out of the index.
func (h *eventHub) removeDropped(dropped []*eventQueue) {
	if len(dropped) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range dropped {
		h.removeLocked(q)
	}
}

// hasQueue reports whether the user has any queue. A change committed
// before the answer is false needs no event: a queue registered after it
// reads its state after the commit.
func (h *eventHub) hasQueue(userID uint64) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.byUser[userID]) > 0
}

// listening reports whether any queue of the user hears flag changes,
// with the number of the user's latest registration. The committer asks
// it, so it takes only seqMu, which no fan-out holds.
func (h *eventHub) listening(userID uint64) (bool, uint64) {
	h.seqMu.Lock()
	defer h.seqMu.Unlock()
	return h.flagHears[userID] > 0, h.regSeq[userID]
}

// dropNewerThan removes the user's queues registered after seq: a change
// made before they existed was not collected for them, and they may have
// read their state before it was committed. Their clients re-register.
func (h *eventHub) dropNewerThan(userID, seq uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range slices.Clone(h.byUser[userID]) {
		if q.regSeq > seq {
			h.removeLocked(q)
		}
	}
}

// poll answers the events after lastEventID, waiting up to the poll
// timeout for one unless dontBlock; after the wait it answers a
// heartbeat. It answers false when the queue does not exist (or stops
// existing while it waits).
//
// A poll that would wait parks instead when park gives it a parked poll
// (parking.go); it then answers parked, and the answer is written later.
//
// A queue has one client, so one poll waits on it at a time: as in
// Zulip (ClientDescriptor.finish_current_handler), a poll answers the
// one waiting before it with what the queue holds, and one member
// polling a queue from many connections holds one of them, not every
// connection slot.
func (h *eventHub) poll(ctx context.Context, userID uint64, id string, lastEventID int64, dontBlock bool, park func() *parkedPoll) (events []json.RawMessage, found, parked bool) {
	h.mu.RLock()
	q, ok := h.queue(userID, id)
	h.mu.RUnlock()
	if !ok {
		return nil, false, false
	}
	mine := h.replacePolls(q)
	var deadline *time.Timer
	defer func() {
		if deadline != nil {
			deadline.Stop()
		}
	}()
	for {
		q.mu.Lock()
		if q.dropped {
			q.mu.Unlock()
			return nil, false, false
		}
		q.lastPoll = h.now()
		// Events up to lastEventID are acknowledged: let them go.
		h.releaseLocked(q, int(min(max(lastEventID-q.firstID+1, 0), int64(len(q.events)))))
		if len(q.events) > 0 || dontBlock || h.closed.Load() || q.newest != mine {
			pending, first := slices.Clone(q.events), q.firstID
			q.mu.Unlock()
			return render(pending, first), true, false
		}
		if park != nil {
			q.mu.Unlock()
			p := park()
			park = nil
			if p != nil {
				h.park(q, p, mine)
				return nil, true, true
			}
			continue // it waits here: look again, the queue may have changed
		}
		if q.wake == nil {
			q.wake = make(chan struct{})
		}
		q.polls++
		wake := q.wake
		q.mu.Unlock()
		if deadline == nil {
			deadline = time.NewTimer(h.pollTimeout)
		}
		heartbeatDue := false
		select {
		case <-wake:
		case <-deadline.C:
			heartbeatDue = true
		case <-ctx.Done():
		}
		q.mu.Lock()
		q.polls--
		if q.woken { // this poll runs: another queue's may wake
			q.woken = false
			<-h.wakeSlots
		}
		q.lastPoll = h.now()
		over, wakeOthers := false, false
		if heartbeatDue {
			over, wakeOthers = h.heartbeatLocked(q)
		}
		q.mu.Unlock()
		h.afterHeartbeat(q, over, wakeOthers)
		if ctx.Err() != nil {
			return nil, true, false
		}
	}
}

// replacePolls answers the polls waiting on q, as a newer poll has
// reached it: parked ones through the answerers, and those waiting in
// their handlers are woken to find themselves replaced. It answers the
// newer poll's number.
func (h *eventHub) replacePolls(q *eventQueue) uint64 {
	q.mu.Lock()
	q.newest++
	mine := q.newest
	if q.wake != nil && q.polls > len(q.parked) {
		close(q.wake)
		q.wake = nil
	}
	parked, events := h.unparkLocked(q)
	q.mu.Unlock()
	for _, p := range parked {
		h.answer(p, events, true, true)
	}
	return mine
}

// heartbeatLocked gives the queue of a poll that waited the poll timeout
// its heartbeat; over when the queue had no room for it and is dropped,
// wakeOthers when other polls wait on it. q.mu is held.
func (h *eventHub) heartbeatLocked(q *eventQueue) (over, wakeOthers bool) {
	if q.dropped {
		return false, false
	}
	wakeOthers, fits := h.enqueueLocked(q, queuedEvent{shared: heartbeat})
	if !fits {
		h.dropLocked(q)
		return true, false
	}
	return false, wakeOthers
}

// afterHeartbeat does what heartbeatLocked asks, once q.mu is let go.
func (h *eventHub) afterHeartbeat(q *eventQueue, over, wakeOthers bool) {
	if over {
		h.removeDropped([]*eventQueue{q})
	}
	h.relieve()
	if wakeOthers { // another poll waits on the queue too
		h.wakeQueues([]*eventQueue{q})
	}
}

// render writes the events, the first with id first, as their queue's
// client receives them, in one buffer.
func render(events []queuedEvent, first int64) []json.RawMessage {
	n := 0
	for i, e := range events {
		n += e.size(first + int64(i))
	}
	buf := make([]byte, 0, n)
	out := make([]json.RawMessage, len(events))
	for i, e := range events {
		start := len(buf)
		buf = e.appendJSON(buf, first+int64(i))
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}

// expire drops queues not polled for the idle timeout; a queue with a
// poll waiting on it is in use, however long the poll waits.
func (h *eventHub) expire() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	for _, q := range h.queues {
		q.mu.Lock()
		idle := q.polls == 0 && now.Sub(q.lastPoll) >= h.idleTimeout
		q.mu.Unlock()
		if idle {
			h.removeLocked(q)
		}
	}
}

// run expires idle queues until ctx ends.
func (h *eventHub) run(ctx context.Context) {
	tick := time.NewTicker(min(time.Minute, h.idleTimeout/2))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			h.expire()
		}
	}
}

// close makes every waiting poll answer at once, for a prompt shutdown.
func (h *eventHub) close() {
	if !h.closed.CompareAndSwap(false, true) {
		return
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, q := range h.queues {
		q.mu.Lock()
		if q.wake != nil {
			close(q.wake)
			q.wake = nil
		}
		parked, events := h.unparkLocked(q)
		q.mu.Unlock()
		for _, p := range parked {
			h.answer(p, events, true, false)
		}
	}
}
