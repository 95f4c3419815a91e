package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
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

// eventQueue is one client's queue.
type eventQueue struct {
	id             string
	userID         uint64
	types          []string // event types wanted; nil means all
	narrow         []narrowTerm
	applyMarkdown  bool
	clientGravatar bool
	created        time.Time

	// guarded by hub.mu
	events   []event
	nextID   int64
	lastPoll time.Time
	wake     chan struct{} // signalled when events arrive
}

func (q *eventQueue) wants(eventType string) bool {
	return q.types == nil || slices.Contains(q.types, eventType)
}

// eventHub holds every queue of the server.
type eventHub struct {
	mu          sync.Mutex
	queues      map[string]*eventQueue
	idleTimeout time.Duration
	now         func() time.Time
	done        chan struct{} // closed at shutdown: waiting polls answer at once
	closed      bool
}

func newEventHub() *eventHub {
	return &eventHub{queues: map[string]*eventQueue{}, idleTimeout: queueIdleTimeout, now: time.Now, done: make(chan struct{})}
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
	q.wake = make(chan struct{}, 1)
	var mine []*eventQueue
	for _, other := range h.queues {
		if other.userID == q.userID {
			mine = append(mine, other)
		}
	}
	if len(mine) >= maxQueuesPerUser {
		oldest := slices.MinFunc(mine, func(a, b *eventQueue) int { return a.created.Compare(b.created) })
		delete(h.queues, oldest.id)
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

// remove deletes the user's queue.
func (h *eventHub) remove(userID uint64, id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.queue(userID, id); !ok {
		return false
	}
	delete(h.queues, id)
	return true
}

// hasQueues reports whether any queue of the user wants the event type,
// so that callers skip work nobody will receive.
func (h *eventHub) hasQueues(userID uint64, eventType string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range h.queues {
		if q.userID == userID && q.wants(eventType) {
			return true
		}
	}
	return false
}

// publish offers an event to every queue of the users; build makes the
// queue's copy (it may answer nil to skip that queue).
func (h *eventHub) publish(userIDs []uint64, eventType string, build func(q *eventQueue) event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range h.queues {
		if !slices.Contains(userIDs, q.userID) || !q.wants(eventType) {
			continue
		}
		e := build(q)
		if e == nil {
			continue
		}
		h.enqueue(q, e)
	}
}

// enqueue adds an event to a queue; h.mu is held. A queue that has fallen
// too far behind is dropped: its client re-registers.
func (h *eventHub) enqueue(q *eventQueue, e event) {
	if len(q.events) >= maxEventsPerQueue {
		delete(h.queues, q.id)
		return
	}
	e["id"] = q.nextID
	q.nextID++
	q.events = append(q.events, e)
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// poll answers the events after lastEventID, waiting up to pollTimeout
// for one unless dontBlock; after the wait it answers a heartbeat.
func (h *eventHub) poll(ctx context.Context, userID uint64, id string, lastEventID int64, dontBlock bool) ([]event, bool) {
	deadline := time.NewTimer(pollTimeout)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		q, ok := h.queue(userID, id)
		if !ok {
			h.mu.Unlock()
			return nil, false
		}
		q.lastPoll = h.now()
		// Events up to lastEventID are acknowledged: drop them.
		q.events = slices.DeleteFunc(q.events, func(e event) bool { return e["id"].(int64) <= lastEventID })
		if len(q.events) > 0 || dontBlock || h.closed {
			pending := slices.Clone(q.events)
			h.mu.Unlock()
			return pending, true
		}
		wake := q.wake
		h.mu.Unlock()
		select {
		case <-wake:
		case <-deadline.C:
			h.mu.Lock()
			if q, ok := h.queue(userID, id); ok {
				q.lastPoll = h.now()
				h.enqueue(q, event{"type": "heartbeat"})
			}
			h.mu.Unlock()
		case <-ctx.Done():
			return nil, true
		case <-h.done:
		}
	}
}

// expire drops queues not polled for the idle timeout.
func (h *eventHub) expire() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	for id, q := range h.queues {
		if now.Sub(q.lastPoll) >= h.idleTimeout {
			delete(h.queues, id)
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

// matchesNarrow applies a queue's narrow to a message event.
func (q *eventQueue) matchesNarrow(m sentMessage, senderEmail string) bool {
	for _, t := range q.narrow {
		var ok bool
		switch t.Operator {
		case "channel":
			ok = (t.ID != 0 && t.ID == m.ChannelID) || (t.Name != "" && strings.EqualFold(t.Name, m.Channel.Name))
		case "topic":
			ok = strings.EqualFold(t.Name, m.Topic)
		case "sender":
			ok = (t.ID != 0 && t.ID == m.SenderID) || strings.EqualFold(t.Name, senderEmail)
		default:
			ok = true // other operators do not filter events
		}
		if ok == t.Negated {
			return false
		}
	}
	return true
}
