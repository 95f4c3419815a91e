package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// Event queues live in memory, as Zulip's do in Tornado: a client
// registers a queue (POST /register), then long-polls it (GET /events).
// A server restart loses every queue, and clients re-register when told
// BAD_EVENT_QUEUE_ID, as Zulip clients do. No storage transaction is ever
// held while a poll waits.
const (
	queueIdleTimeout  = 10 * time.Minute // a queue not polled for this long is dropped
	maxQueuesPerUser  = 20               // registering one more drops the user's oldest
	maxEventsPerQueue = 1000             // a queue that falls this far behind is dropped
	pollTimeout       = 50 * time.Second // a poll with nothing to say answers a heartbeat
)

// event is one event as a client receives it; "id" is set per queue.
type event map[string]any

// Bounds on what queues may hold, so that idle clients cannot exhaust a
// small device: a queue over either is dropped (its client re-registers).
const (
	maxQueueBytes      = 256 << 10 // encoded events waiting in one queue
	maxTotalQueueBytes = 8 << 20   // in all queues together
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

	// guarded by hub.mu
	events   []queuedEvent
	bytes    int
	nextID   int64
	lastPoll time.Time
	polls    int           // polls waiting on it; it does not expire meanwhile
	wake     chan struct{} // closed when events arrive, then replaced
	gone     chan struct{} // closed when the queue is removed
}

// queuedEvent is an event encoded once, when it is queued.
type queuedEvent struct {
	id  int64
	raw json.RawMessage
}

func (q *eventQueue) wants(eventType string) bool {
	return q.types == nil || slices.Contains(q.types, eventType)
}

// eventHub holds every queue of the server.
type eventHub struct {
	mu          sync.Mutex
	queues      map[string]*eventQueue
	regSeq      map[uint64]uint64 // user → registrations so far
	totalBytes  int
	idleTimeout time.Duration
	pollTimeout time.Duration
	now         func() time.Time
	done        chan struct{} // closed at shutdown: waiting polls answer at once
	closed      bool
}

func newEventHub() *eventHub {
	return &eventHub{queues: map[string]*eventQueue{}, regSeq: map[uint64]uint64{},
		idleTimeout: queueIdleTimeout, pollTimeout: pollTimeout, now: time.Now, done: make(chan struct{})}
}

// register makes a queue for the user, dropping their oldest queue when
// they already have the most allowed.
func (h *eventHub) register(q *eventQueue) {
	id := make([]byte, 12)
	rand.Read(id)
	h.mu.Lock()
	defer h.mu.Unlock()
	q.id = hex.EncodeToString(id)
	q.created, q.lastPoll = h.now(), h.now()
	q.wake, q.gone = make(chan struct{}), make(chan struct{})
	h.regSeq[q.userID]++
	q.regSeq = h.regSeq[q.userID]
	var mine []*eventQueue
	for _, other := range h.queues {
		if other.userID == q.userID {
			mine = append(mine, other)
		}
	}
	if len(mine) >= maxQueuesPerUser {
		h.removeLocked(slices.MinFunc(mine, func(a, b *eventQueue) int { return a.created.Compare(b.created) }))
	}
	h.queues[q.id] = q
}

// queue finds the user's queue; another user's queue does not exist.
func (h *eventHub) queue(userID uint64, id string) (*eventQueue, bool) {
	q, ok := h.queues[id]
	if !ok || q.userID != userID {
		return nil, false
	}
	return q, true
}

// removeLocked drops a queue and tells its waiting polls; h.mu is held.
func (h *eventHub) removeLocked(q *eventQueue) {
	if _, ok := h.queues[q.id]; !ok {
		return
	}
	delete(h.queues, q.id)
	h.totalBytes -= q.bytes
	close(q.gone)
}

// removeAll deletes every queue of the user, ending their waiting polls.
func (h *eventHub) removeAll(userID uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range h.queues {
		if q.userID == userID {
			h.removeLocked(q)
		}
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

// listening reports whether any queue of the user hears flag changes,
// with the number of the user's latest registration.
func (h *eventHub) listening(userID uint64) (bool, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range h.queues {
		if q.userID == userID && q.wants("update_message_flags") {
			return true, h.regSeq[userID]
		}
	}
	return false, h.regSeq[userID]
}

// dropNewerThan removes the user's queues registered after seq: a change
// made before they existed was not collected for them, and they may have
// read their state before it was committed. Their clients re-register.
func (h *eventHub) dropNewerThan(userID, seq uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range h.queues {
		if q.userID == userID && q.regSeq > seq {
			h.removeLocked(q)
		}
	}
}

// publish offers an event to every queue that match accepts and that
// wants its type; build makes that queue's copy (nil skips the queue).
func (h *eventHub) publish(eventType string, match func(q *eventQueue) bool, build func(q *eventQueue) event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range h.queues {
		if !q.wants(eventType) || !match(q) {
			continue
		}
		if e := build(q); e != nil {
			h.enqueueLocked(q, e)
		}
	}
}

// enqueueLocked adds an event to a queue; h.mu is held. A queue that has
// fallen too far behind is dropped: its client re-registers.
func (h *eventHub) enqueueLocked(q *eventQueue, e event) {
	e["id"] = q.nextID
	raw, err := json.Marshal(e)
	if err != nil || len(q.events) >= maxEventsPerQueue || q.bytes+len(raw) > maxQueueBytes || h.totalBytes+len(raw) > maxTotalQueueBytes {
		h.removeLocked(q)
		return
	}
	q.nextID++
	q.events = append(q.events, queuedEvent{e["id"].(int64), raw})
	q.bytes += len(raw)
	h.totalBytes += len(raw)
	close(q.wake) // every waiting poll wakes
	q.wake = make(chan struct{})
}

// poll answers the events after lastEventID, waiting up to the poll
// timeout for one unless dontBlock; after the wait it answers a
// heartbeat. It answers false when the queue does not exist (or stops
// existing while it waits).
func (h *eventHub) poll(ctx context.Context, userID uint64, id string, lastEventID int64, dontBlock bool) ([]json.RawMessage, bool) {
	deadline := time.NewTimer(h.pollTimeout)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		q, ok := h.queue(userID, id)
		if !ok {
			h.mu.Unlock()
			return nil, false
		}
		q.lastPoll = h.now()
		acked := 0 // events up to lastEventID are acknowledged: drop them
		for acked < len(q.events) && q.events[acked].id <= lastEventID {
			q.bytes -= len(q.events[acked].raw)
			h.totalBytes -= len(q.events[acked].raw)
			acked++
		}
		q.events = q.events[acked:]
		if len(q.events) > 0 || dontBlock || h.closed {
			pending := make([]json.RawMessage, len(q.events))
			for i, e := range q.events {
				pending[i] = e.raw
			}
			h.mu.Unlock()
			return pending, true
		}
		q.polls++
		wake, gone := q.wake, q.gone
		h.mu.Unlock()
		heartbeat := false
		select {
		case <-wake:
		case <-gone:
		case <-h.done:
		case <-deadline.C:
			heartbeat = true
		case <-ctx.Done():
		}
		h.mu.Lock()
		q.polls--
		q.lastPoll = h.now()
		if heartbeat {
			if _, still := h.queues[q.id]; still {
				h.enqueueLocked(q, event{"type": "heartbeat"})
			}
		}
		h.mu.Unlock()
		if ctx.Err() != nil {
			return nil, true
		}
	}
}

// expire drops queues not polled for the idle timeout; a queue with a
// poll waiting on it is in use, however long the poll waits.
func (h *eventHub) expire() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	for _, q := range h.queues {
		if q.polls == 0 && now.Sub(q.lastPoll) >= h.idleTimeout {
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
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
}
